import * as YAML from "yaml"
import type { InitDocument } from "./plan.js"

// A database name may hold a newline or other control character; inside a comment it would end the comment and
// turn the rest of the name into YAML. Such characters are shown escaped instead.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f\u2028\u2029]/g

const commentText = (lines: ReadonlyArray<string>): string =>
  lines
    .map((line) => line.replace(CONTROL, (char) => JSON.stringify(char).slice(1, -1)))
    .map((line) => (line.length === 0 ? "" : ` ${line}`))
    .join("\n")

/** The node a comment path names: a sequence item, or the key of a map entry (so the comment sits above it). */
const commentTarget = (doc: YAML.Document, path: ReadonlyArray<string | number>): YAML.Node | undefined => {
  const parent = doc.getIn(path.slice(0, -1), true)
  const last = path[path.length - 1]
  if (YAML.isSeq(parent) && typeof last === "number") {
    const item = parent.items[last]
    return YAML.isNode(item) ? item : undefined
  }
  if (YAML.isMap(parent)) {
    const pair = parent.items.find((entry) => YAML.isScalar(entry.key) && entry.key.value === last)
    return pair !== undefined && YAML.isNode(pair.key) ? pair.key : undefined
  }
  return undefined
}

/** The generated config as YAML text with its comments; every scalar is quoted by the YAML library as needed. */
export const renderInitYaml = (plan: InitDocument): string => {
  const doc = new YAML.Document(plan.value)
  doc.commentBefore = commentText(plan.header)
  for (const path of plan.flow) {
    const node = doc.getIn(path, true)
    if (YAML.isCollection(node)) node.flow = true
  }
  for (const { path, lines } of plan.comments) {
    const target = commentTarget(doc, path)
    if (target !== undefined) target.commentBefore = commentText(lines)
  }
  const exportsPair = YAML.isMap(doc.contents) ? doc.contents.items.find((pair) => YAML.isScalar(pair.key) && pair.key.value === "exports") : undefined
  if (exportsPair !== undefined && YAML.isNode(exportsPair.key)) exportsPair.key.spaceBefore = true
  const items = doc.getIn(["exports"], true)
  if (YAML.isSeq(items)) {
    items.items.forEach((item, index) => {
      if (index > 0 && YAML.isNode(item)) item.spaceBefore = true
    })
  }
  return doc.toString({ lineWidth: 0, flowCollectionPadding: true })
}
