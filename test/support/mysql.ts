import mysql from "mysql2/promise"
import { inject } from "vitest"

/**
 * The MySQL URL the tests use (found by test/support/global-setup.ts), or "" when no server answered: then the
 * MySQL tests are skipped, and the global setup printed the one line that says so.
 */
export const testMysqlUrl = (): string => inject("mysqlUrl")

/** True when no MySQL server answered: `describe.skipIf(noMysql)`. */
export const noMysql = (): boolean => testMysqlUrl() === ""

/** A connection for setting up test tables (multiple statements allowed), closed by the caller. */
export const adminConnection = () =>
  mysql.createConnection({ uri: testMysqlUrl(), multipleStatements: true, dateStrings: true, supportBigNumbers: true, bigNumberStrings: true })

/** The MariaDB with a binary log (test/support/global-setup.ts), or "" when none: the MySQL CDC tests are skipped. */
export const testMysqlBinlogUrl = (): string => inject("mysqlBinlogUrl")
