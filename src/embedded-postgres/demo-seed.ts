import * as Effect from "effect/Effect"
import postgres from "postgres"
import { describeCause, SourceError } from "../core/errors.js"

/**
 * The demo dataset of the embedded PostgreSQL: a small shop in the `public` schema of the `postgres` database.
 * Every value is derived from `generate_series` arithmetic (no `random()`), so the data is the same on every
 * machine and tests can assert on it. Together the columns cover every type Rivet maps.
 */
export const DEMO_ROW_COUNTS = {
  customers: 2_000,
  products: 500,
  orders: 20_000,
  order_items: 50_000,
  events: 10_000
} as const

/** Bumped when the dataset changes; stored in the marker table `rivet_demo`. */
export const DEMO_SEED_VERSION = 1

/** The marker table: present once the dataset has been seeded (in the same transaction as the data). */
export const DEMO_MARKER_TABLE = "rivet_demo"

const MARKER = `public.${DEMO_MARKER_TABLE}`

/** The whole dataset as one multi-statement script; run it inside a transaction. */
export const DEMO_SEED_SQL = `
SET LOCAL search_path = public;

CREATE TABLE ${DEMO_MARKER_TABLE} (
  version int4 NOT NULL,
  seeded_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE ${DEMO_MARKER_TABLE} IS 'Marker: the Rivet demo dataset is seeded in this database.';
INSERT INTO ${DEMO_MARKER_TABLE} (version) VALUES (${DEMO_SEED_VERSION});

CREATE TYPE order_status AS ENUM ('pending', 'paid', 'shipped', 'delivered', 'cancelled', 'refunded');

CREATE TABLE customers (
  id int4 PRIMARY KEY,
  name text NOT NULL,
  email text NOT NULL UNIQUE,
  country char(2) NOT NULL,
  created_at timestamptz NOT NULL,
  is_active bool NOT NULL,
  lifetime_value numeric(12,2) NOT NULL
);
INSERT INTO customers
SELECT i,
       n.first_name || ' ' || n.last_name,
       lower(translate(n.first_name || '.' || n.last_name, 'ëéŁøíüó''', 'eeLoiuo')) || i || '@example.com',
       (ARRAY['US','DE','FR','GB','JP','BR','IN','CA','AU','NL'])[1 + (i * 7) % 10],
       timestamptz '2022-01-01 00:00:00+00' + i * interval '6 hours 17 minutes 3.123457 seconds',
       i % 9 <> 0,
       ((i * 7919) % 1000000) / 100.0
FROM generate_series(1, ${DEMO_ROW_COUNTS.customers}) AS i
CROSS JOIN LATERAL (
  SELECT (ARRAY['Ada','Grace','Alan','Zoë','José','Łukasz','Søren','Amélie','Kenji','Priya','Chiara','Olu',
                'Mia','Noah','Ingrid','Mateo'])[1 + i % 16] AS first_name,
         (ARRAY['Lovelace','Hopper','Turing','O''Connor','García','Nowak','Kierkegaard','Dubois','Tanaka',
                'Sharma','Rossi','Adeyemi','Müller','Smith','Berg','López'])[1 + (i / 16) % 16] AS last_name
) AS n;

CREATE TABLE products (
  id int4 PRIMARY KEY,
  sku text NOT NULL UNIQUE,
  name text NOT NULL,
  price numeric(10,2) NOT NULL,
  tags text[] NOT NULL,
  attributes jsonb NOT NULL,
  weight_kg float8
);
INSERT INTO products
SELECT i,
       'SKU-' || lpad(i::text, 5, '0'),
       (ARRAY['Classic','Eco','Pro','Mini','Deluxe','Travel','Smart','Vintage'])[1 + i % 8] || ' ' ||
         (ARRAY['Mug','Backpack','Lamp','Notebook','Headphones','Kettle','Chair','Umbrella','Bottle',
                'Scarf'])[1 + (i / 8) % 10],
       2.99 + ((i * 3701) % 29000) / 100.0,
       CASE i % 4
         WHEN 0 THEN ARRAY[]::text[]
         WHEN 1 THEN ARRAY[(ARRAY['home','outdoor','office','kitchen'])[1 + i % 4]]
         WHEN 2 THEN ARRAY[(ARRAY['home','outdoor','office','kitchen'])[1 + i % 4], 'bestseller']
         ELSE ARRAY[(ARRAY['home','outdoor','office','kitchen'])[1 + i % 4], 'sale', 'eco-friendly']
       END,
       jsonb_build_object(
         'color', (ARRAY['red','green','blue','black','white','sand'])[1 + i % 6],
         'in_stock', i % 7 <> 0,
         'dimensions_cm', jsonb_build_array(10 + i % 30, 5 + i % 20, 2 + i % 10),
         'rating', round(3 + (i % 21) / 10.0, 1)
       ),
       CASE WHEN i % 25 = 0 THEN NULL ELSE (i % 97) * 0.173 + 0.05 END
FROM generate_series(1, ${DEMO_ROW_COUNTS.products}) AS i;

CREATE TABLE orders (
  id int8 PRIMARY KEY,
  customer_id int4 NOT NULL,
  ordered_at timestamptz NOT NULL,
  status order_status NOT NULL,
  total numeric(12,2) NOT NULL,
  shipped_on date,
  notes text
);
CREATE TABLE order_items (
  order_id int8 NOT NULL,
  line_no int2 NOT NULL,
  product_id int4 NOT NULL,
  quantity int2 NOT NULL,
  unit_price numeric(10,2) NOT NULL,
  discount numeric(5,4) NOT NULL,
  PRIMARY KEY (order_id, line_no)
);
-- Order n has 1 + n % 4 lines: 20 000 orders give exactly 50 000 lines.
INSERT INTO order_items
SELECT 10000000000 + o, l, p.id, 1 + (o + l) % 5, p.price, ((o * 7 + l) % 5) * 0.0125
FROM generate_series(1, ${DEMO_ROW_COUNTS.orders}) AS o
CROSS JOIN LATERAL generate_series(1, 1 + o % 4) AS l
JOIN products AS p ON p.id = 1 + (o * 31 + l * 17) % ${DEMO_ROW_COUNTS.products};

INSERT INTO orders
SELECT 10000000000 + i,
       1 + (i * 7919) % ${DEMO_ROW_COUNTS.customers},
       o.ordered_at,
       o.status,
       t.total,
       CASE WHEN o.status IN ('shipped', 'delivered') THEN (o.ordered_at AT TIME ZONE 'UTC')::date + 1 + i % 5 END,
       CASE i % 10
         WHEN 1 THEN 'Leave at the door, "please"'
         WHEN 3 THEN 'Bitte an der Tür abgeben — danke! 🚚'
         WHEN 5 THEN E'Gift wrap\\nCard: "Happy birthday, Zoë!"'
         WHEN 7 THEN 'O''Brien''s office; ring twice'
         ELSE NULL
       END
FROM generate_series(1, ${DEMO_ROW_COUNTS.orders}) AS i
CROSS JOIN LATERAL (
  SELECT timestamptz '2023-01-01 00:00:00+00' + i * interval '26 minutes 17.654321 seconds' AS ordered_at,
         (ARRAY['pending','paid','shipped','delivered','delivered','delivered','cancelled',
                'refunded'])[1 + (i * 13) % 8]::order_status AS status
) AS o
JOIN (
  SELECT order_id, sum(round(quantity * unit_price * (1 - discount), 2)) AS total
  FROM order_items GROUP BY order_id
) AS t ON t.order_id = 10000000000 + i;

CREATE TABLE events (
  id int8 PRIMARY KEY,
  event_id uuid NOT NULL UNIQUE,
  customer_id int4,
  kind text NOT NULL,
  occurred_at timestamp NOT NULL,
  time_of_day time NOT NULL,
  duration interval NOT NULL,
  score float4,
  payload bytea NOT NULL
);
INSERT INTO events
SELECT i,
       md5('event-' || i)::uuid,
       CASE WHEN i % 6 = 0 THEN NULL ELSE 1 + (i * 37) % ${DEMO_ROW_COUNTS.customers} END,
       (ARRAY['page_view','search','add_to_cart','checkout','login','support_chat'])[1 + (i * 5) % 6],
       e.occurred_at,
       e.occurred_at::time,
       make_interval(months => CASE WHEN i % 500 = 0 THEN 1 ELSE 0 END, days => i % 3, hours => i % 24,
                     mins => i % 60, secs => (i % 1000) / 1000.0),
       CASE WHEN i % 11 = 0 THEN NULL ELSE ((i * 17) % 1000) / 8.0 END,
       decode(md5(i::text), 'hex') || CASE WHEN i % 4 = 0 THEN '\\x00ff'::bytea ELSE ''::bytea END
FROM generate_series(1, ${DEMO_ROW_COUNTS.events}) AS i
CROSS JOIN LATERAL (
  SELECT timestamp '2024-03-01 00:00:00' + i * interval '4 minutes 3.000001 seconds' AS occurred_at
) AS e;

-- Foreign keys once the data is in: one validating scan each instead of a trigger call per row.
ALTER TABLE orders ADD FOREIGN KEY (customer_id) REFERENCES customers;
ALTER TABLE order_items ADD FOREIGN KEY (order_id) REFERENCES orders;
ALTER TABLE order_items ADD FOREIGN KEY (product_id) REFERENCES products;
ALTER TABLE events ADD FOREIGN KEY (customer_id) REFERENCES customers;

ANALYZE;
`

/**
 * Seeds the demo dataset into the database at `url` unless the marker table is already there.
 * Succeeds with `true` when it seeded now, `false` when the data was already present.
 */
export const seedDemoIfAbsent = Effect.fn("EmbeddedPostgres.seedDemo")(function* (url: string) {
  const failure = (what: string) => (cause: unknown) =>
    new SourceError({
      source: "postgres (embedded)",
      message: `${what}: ${describeCause(cause)}`,
      hint: "The embedded demo database may be damaged; delete its data directory and run again to re-create it.",
      retryable: false
    })
  return yield* Effect.acquireUseRelease(
    Effect.sync(() => postgres(url, { max: 1, onnotice: () => {} })),
    (sql) =>
      Effect.gen(function* () {
        const rows = yield* Effect.tryPromise({
          try: () => sql<Array<{ seeded: boolean }>>`select to_regclass(${MARKER}) is not null as seeded`,
          catch: failure("Could not check for the demo dataset")
        })
        if (rows[0]?.seeded === true) return false
        yield* Effect.tryPromise({
          try: () => sql.begin((tx) => tx.unsafe(DEMO_SEED_SQL)),
          catch: failure("Seeding the demo dataset failed")
        })
        return true
      }),
    (sql) => Effect.promise(() => sql.end({ timeout: 5 }).catch(() => undefined))
  )
})
