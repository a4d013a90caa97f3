/** Float text as PostgreSQL prints it (shortest round-trip), shared by the text formats and `valueAt`. */

export const float64Text = (n: number): string => (n === 0 && 1 / n < 0 ? "-0" : `${n}`)

const bits = new Uint32Array(1)
const single = new Float32Array(bits.buffer)

/** Whether `x` lies exactly halfway between the float4 `f` and one of its neighbours. */
const isMidpoint = (x: number, f: number): boolean => {
  single[0] = f
  bits[0]! += 1
  const away = single[0]!
  bits[0]! -= 2
  const toward = single[0]!
  return x === (f + away) / 2 || x === (f + toward) / 2
}

/**
 * The shortest decimal that reads back to the same float4, as a double would print it: `0.1` for the float4
 * nearest 0.1, not `0.10000000149011612`. This is the text PostgreSQL gives for a `real` (its shortest round-trip
 * output, which never picks a decimal lying exactly halfway to a neighbour even when reading it back would round
 * to this float4: `68995696`, not `68995700`). Rounding to more digits never moves away from the value, so the
 * fewest digits are found by bisection over 1–9 (9 always do).
 */
export const float32Text = (f: number): string => {
  if (!Number.isFinite(f) || f === 0) return float64Text(f)
  const fits = (digits: number) => roundTrips(Number(f.toPrecision(digits)), f) || roundTrips(aboveAtPowerOfTwo(f, digits), f)
  let low = 1
  let high = 9
  while (low < high) {
    const mid = (low + high) >> 1
    if (fits(mid)) high = mid
    else low = mid + 1
  }
  const nearest = Number(evenOnTie(f, low))
  return `${roundTrips(nearest, f) ? nearest : aboveAtPowerOfTwo(f, low)}`
}

const roundTrips = (candidate: number, f: number): boolean => Math.fround(candidate) === f && !isMidpoint(candidate, f)

/**
 * Below a power of two the float4s are twice as dense, so the nearest decimal of some length may miss the value's
 * (lopsided) rounding interval while the next one up, in magnitude, lies inside it: 2^-96 is `1.2621775e-29`.
 * That next decimal for a power of two, `NaN` for any other value.
 */
const aboveAtPowerOfTwo = (f: number, digits: number): number => {
  single[0] = f
  if ((bits[0]! & 0x7fffff) !== 0) return Number.NaN
  const text = Math.abs(f).toExponential(digits - 1)
  const e = text.indexOf("e")
  const step = (Number(text.slice(0, e)) + 10 ** (1 - digits)).toFixed(digits - 1)
  return Math.sign(f) * Number(`${step}${text.slice(e)}`)
}

/**
 * `f.toPrecision(digits)`, except that a value exactly halfway between two decimals of that length takes the one
 * with the even last digit, as shortest round-trip output does (`toPrecision` takes the larger: 3823031.25 with 8
 * digits is `3823031.2`, not `3823031.3`). A tie needs the exact expansion to end in 5 right after the kept digits.
 */
const mantissaOf = (exponential: string): string => exponential.slice(0, exponential.indexOf("e"))

const evenOnTie = (f: number, digits: number): string => {
  const rounded = f.toPrecision(digits)
  const longer = f.toExponential(digits)
  const e = longer.indexOf("e")
  if (longer[e - 1] !== "5") return rounded
  // Halfway only if the float4's exact expansion (101 digits are enough to tell) ends with that 5.
  if (mantissaOf(f.toExponential(100)).replace(/0+$/, "") !== longer.slice(0, e)) return rounded
  // Keep the truncated digits when their last one is even, else the rounded-up ones.
  const kept = longer[e - 2] === "." ? longer[e - 3]! : longer[e - 2]!
  if (Number(kept) % 2 === 1) return rounded
  return `${longer.slice(0, e - 1).replace(/\.$/, "")}${longer.slice(e)}`
}
