-- The results store (docs/store.md), schema version 1. The same statements make it in SQLite and
-- in PostgreSQL: only TEXT, INTEGER and DOUBLE PRECISION columns, no engine-specific types.
-- Dates are ISO 8601 UTC text ("2026-11-29T08:49:58Z"), which sort as the times they name.
CREATE TABLE ipclab_store (
  key TEXT PRIMARY KEY,  -- schema_version, created, and generated_machine:<hostname>:<fingerprint>
  value TEXT NOT NULL
);
-- One row per machine identity: a change of hardware (CPU model, CPUs, packages, NUMA nodes)
-- or of the machine's own id makes a new one, and so a new series.
CREATE TABLE machines (
  id TEXT PRIMARY KEY,           -- 16 hex digits of SHA-256 over source id and topology
  source TEXT NOT NULL,          -- where the id came from: dmi, machine-id, generated
  cpu_model TEXT NOT NULL,
  logical_cpus INTEGER NOT NULL,
  packages INTEGER NOT NULL,
  numa_nodes INTEGER NOT NULL,
  hostname TEXT NOT NULL,
  first_seen TEXT NOT NULL
);
-- One row per stored run (ipclab run, advise, or a result file imported).
CREATE TABLE runs (
  id TEXT PRIMARY KEY,           -- a random UUID
  kind TEXT NOT NULL,            -- run | advise | import | ab (a side of ipclab ab's slices)
  date TEXT NOT NULL,            -- when the run started (its context.date)
  stored TEXT NOT NULL,          -- when it was written here
  machine_id TEXT NOT NULL REFERENCES machines (id),
  version TEXT NOT NULL,         -- ipclab's version
  git_sha TEXT NOT NULL,         -- the commit it was built from
  build_type TEXT NOT NULL,
  build_flags TEXT NOT NULL,     -- compiler flags: only runs with equal flags are compared
  compiler TEXT NOT NULL,
  kernel TEXT NOT NULL,
  hostname TEXT NOT NULL,
  command_line TEXT NOT NULL,
  load_avg DOUBLE PRECISION,     -- 1-minute load average at its start
  source TEXT NOT NULL,          -- import: the file it came from; else ''
  context TEXT NOT NULL          -- the run's whole context (docs/json-schema.md), JSON
);
CREATE INDEX runs_by_machine ON runs (machine_id, date);
-- One row per record of a run: each repetition (iteration) and each benchmark's median (aggregate).
CREATE TABLE results (
  run_id TEXT NOT NULL REFERENCES runs (id),
  seq INTEGER NOT NULL,          -- its place in the run
  name TEXT NOT NULL,            -- the benchmark's full name: suite/mechanism/every parameter
  suite TEXT NOT NULL,
  mechanism TEXT NOT NULL,
  run_type TEXT NOT NULL,        -- iteration | aggregate
  repetition INTEGER NOT NULL,
  status TEXT NOT NULL,          -- ok | failed | skipped
  metric TEXT NOT NULL,          -- what value is: time/op (ns), p99 (ns, pattern=rate), capacity (/s, rate=auto)
  value DOUBLE PRECISION,        -- null when the record has none (failed, saturated)
  higher_better INTEGER NOT NULL,  -- 1 for capacity
  record TEXT NOT NULL,          -- the whole record, JSON
  PRIMARY KEY (run_id, seq)
);
CREATE INDEX results_by_name ON results (name, run_type);
