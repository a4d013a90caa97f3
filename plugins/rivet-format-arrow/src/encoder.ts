import { AsyncByteQueue, makeData, RecordBatch, RecordBatchFileWriter, Struct, type Schema } from "apache-arrow"
import type { Batch, BatchSchema } from "rivet-export/plugin"
import { columnData } from "./columns.js"
import { arrowSchema } from "./types.js"

/**
 * The writer's byte sink: apache-arrow pushes every piece it writes here synchronously, and `drain` hands them to
 * Rivet right after each batch — so a part is streamed one record batch at a time, never held whole.
 */
class Collector extends AsyncByteQueue<Uint8Array> {
  private pending: Array<Uint8Array> = []
  override write(value: Uint8Array): void {
    if (value.byteLength > 0) this.pending.push(value)
  }
  drain(): ReadonlyArray<Uint8Array> {
    const out = this.pending
    this.pending = []
    return out
  }
}

/** Encodes one output part as an Arrow IPC file (Feather v2): magic, schema, one record batch per Rivet batch, footer. */
export interface ArrowPartEncoder {
  readonly write: (batch: Batch) => ReadonlyArray<Uint8Array>
  readonly finish: () => ReadonlyArray<Uint8Array>
}

const recordBatch = (schema: Schema, batch: Batch): RecordBatch => {
  const children = batch.schema.columns.map((column, index) => columnData(column.type, batch.columns[index]!))
  const data = makeData({ type: new Struct(schema.fields), length: batch.rowCount, nullCount: 0, children })
  return new RecordBatch(schema, data)
}

export const makeArrowEncoder = (schema: BatchSchema): ArrowPartEncoder => {
  const arrow = arrowSchema(schema)
  const sink = new Collector()
  const writer = new RecordBatchFileWriter()
  // Starting with the schema writes the header now, so a part always is a valid file (even with no batch).
  writer.reset(sink, arrow)
  return {
    write: (batch) => {
      writer.write(recordBatch(arrow, batch))
      return sink.drain()
    },
    finish: () => {
      writer.finish()
      return sink.drain()
    }
  }
}
