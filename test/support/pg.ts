import { inject } from "vitest"

/** The PostgreSQL URL every test uses (set up by test/support/global-setup.ts). */
export const testPgUrl = (): string => inject("pgUrl")
