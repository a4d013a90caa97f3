/** A strict RFC 4180 reader for the tests (csv-parse is not installed): unquoted empty field = NULL. */
export const parseCsv = (text: string): Array<Array<string | null>> => {
  const rows: Array<Array<string | null>> = []
  let row: Array<string | null> = []
  let i = 0
  while (i < text.length) {
    if (text[i] === '"') {
      let value = ""
      i++
      for (;;) {
        const q = text.indexOf('"', i)
        if (q < 0) throw new Error("unterminated quoted field")
        value += text.slice(i, q)
        i = q + 1
        if (text[i] !== '"') break
        value += '"'
        i++
      }
      row.push(value)
    } else {
      let j = i
      while (j < text.length && text[j] !== "," && text[j] !== "\n") j++
      const raw = text.slice(i, j)
      if (/["\r]/.test(raw)) throw new Error(`bare field needs quoting: ${JSON.stringify(raw)}`)
      row.push(raw === "" ? null : raw)
      i = j
    }
    if (text[i] === ",") i++
    else if (text[i] === "\n") {
      rows.push(row)
      row = []
      i++
    } else throw new Error(`unexpected ${JSON.stringify(text[i])} at ${i}`)
  }
  if (row.length > 0) throw new Error("last record without a line ending")
  return rows
}
