/** The key prefix of a table's data files at its location (the destination); its metadata lives under `metadata/`. */
export const TABLE_DATA_PREFIX = "data/"
