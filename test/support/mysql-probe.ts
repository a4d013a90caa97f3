import mysql from "mysql2/promise"

/** Where the MySQL tests look when RIVET_TEST_MYSQL_URL is not set. */
export const DEFAULT_MYSQL_URL = "mysql://root@127.0.0.1:3306/test"

/** Whether a MySQL server answers at `url` (within 3 s). */
export const mysqlAnswers = async (url: string): Promise<boolean> => {
  try {
    const connection = await mysql.createConnection({ uri: url, connectTimeout: 3_000 })
    await connection.query("SELECT 1")
    await connection.end()
    return true
  } catch {
    return false
  }
}
