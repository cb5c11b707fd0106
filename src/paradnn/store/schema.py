"""Schema versions of the result database. Append a migration; never edit a shipped one."""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # v1: runs, one row per attempted configuration.
    """
    CREATE TABLE runs (
        id                  INTEGER PRIMARY KEY AUTOINCREMENT,
        run_key             TEXT NOT NULL,
        sweep               TEXT,
        family              TEXT NOT NULL,
        config              TEXT NOT NULL,          -- JSON
        precision           TEXT NOT NULL,
        optimizer           TEXT NOT NULL,
        mode                TEXT NOT NULL,
        device              TEXT NOT NULL,
        device_name         TEXT,
        status              TEXT NOT NULL CHECK (status IN
            ('ok','oom','predicted_oom','timeout','crashed','nan','invalid','unsupported')),
        error               TEXT,
        params              INTEGER,
        params_analytic     INTEGER,
        flops_per_step      INTEGER,
        flops_analytic      INTEGER,
        flops_count_device  TEXT,
        examples_per_step   INTEGER,
        step_time_s         REAL,
        step_time_mean_s    REAL,
        step_time_min_s     REAL,
        step_time_iqr_s     REAL,
        step_time_ci_low_s  REAL,
        step_time_ci_high_s REAL,
        ci_rel              REAL,
        n_samples           INTEGER,
        steps_per_sample    INTEGER,
        converged           INTEGER,
        stop_reason         TEXT,
        first_step_s        REAL,
        warmup_steps        INTEGER,
        warmup_s            REAL,
        host_step_s         REAL,
        samples             TEXT,                   -- JSON list of seconds per step
        examples_per_s      REAL,
        achieved_flops      REAL,
        utilization_datasheet REAL,
        utilization_measured  REAL,
        peak_mem_bytes      INTEGER,
        final_loss          REAL,
        threads             INTEGER,
        fingerprint         TEXT,
        python_version      TEXT,
        torch_version       TEXT,
        cuda_version        TEXT,
        cudnn_version       TEXT,
        driver_version      TEXT,
        cpu_model           TEXT,
        gpu_name            TEXT,
        hostname            TEXT,
        env                 TEXT,                   -- JSON: the whole environment
        flags               TEXT,                   -- JSON: framework flags set for the run
        nulls               TEXT,                   -- JSON: field -> reason it is null
        started_at          TEXT,
        finished_at         TEXT,
        paradnn_version     TEXT
    );
    CREATE INDEX runs_run_key ON runs(run_key);
    CREATE INDEX runs_family_status ON runs(family, status);
    """,
    # v2: sweeps. Attempts number the rows of one run key (a retried failure adds a row, never
    # replaces one); the memory prediction sits next to the measured peak; worker provenance.
    """
    ALTER TABLE runs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE runs ADD COLUMN predicted_mem_bytes INTEGER;
    ALTER TABLE runs ADD COLUMN predicted_mem_lower_bytes INTEGER;
    ALTER TABLE runs ADD COLUMN worker_pid INTEGER;
    ALTER TABLE runs ADD COLUMN worker_index INTEGER;
    UPDATE runs SET attempt = (SELECT COUNT(*) FROM runs AS r
                               WHERE r.run_key = runs.run_key AND r.id <= runs.id);
    CREATE UNIQUE INDEX runs_key_attempt ON runs(run_key, attempt);
    """,
    # v3: what a device can do (measured ceilings), op micro-benchmarks, per-op step profiles.
    """
    CREATE TABLE ceilings (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        device        TEXT NOT NULL,          -- cpu, cuda:0
        device_name   TEXT NOT NULL,          -- CPU model or GPU name
        fingerprint   TEXT NOT NULL,
        kind          TEXT NOT NULL CHECK (kind IN ('matmul', 'copy', 'triad')),
        precision     TEXT,                   -- matmul only
        value         REAL NOT NULL,          -- FLOP/s (matmul) or bytes/s (copy, triad)
        unit          TEXT NOT NULL,
        detail        TEXT,                   -- JSON: sizes tried, samples, best size
        env           TEXT,                   -- JSON
        measured_at   TEXT NOT NULL
    );
    CREATE INDEX ceilings_device ON ceilings(device_name, kind, precision);
    CREATE TABLE ops (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        op            TEXT NOT NULL,          -- matmul, conv2d
        name          TEXT NOT NULL,          -- e.g. matmul-4096, conv2d-II
        shape         TEXT NOT NULL,          -- JSON
        precision     TEXT NOT NULL,
        pass          TEXT NOT NULL CHECK (pass IN ('fwd', 'fwd+bwd')),
        threads       INTEGER,
        device        TEXT NOT NULL,
        device_name   TEXT NOT NULL,
        fingerprint   TEXT NOT NULL,
        status        TEXT NOT NULL,
        error         TEXT,
        flops         INTEGER,
        time_s        REAL,                   -- median
        ci_low_s      REAL,
        ci_high_s     REAL,
        samples       TEXT,                   -- JSON
        achieved_flops REAL,
        utilization_datasheet REAL,
        utilization_measured  REAL,
        nulls         TEXT,                   -- JSON: field -> reason
        env           TEXT,                   -- JSON
        measured_at   TEXT NOT NULL
    );
    CREATE TABLE op_profile (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id        INTEGER NOT NULL REFERENCES runs(id),
        op            TEXT NOT NULL,          -- aten op
        shapes        TEXT,                   -- JSON: input shapes
        dtype         TEXT,
        calls         INTEGER NOT NULL,
        device_time_s REAL,                   -- per step, all calls
        flops         INTEGER,                -- per step, all calls
        bytes         INTEGER,                -- per step, unique inputs + outputs
        achieved_flops REAL,
        intensity     REAL                    -- FLOP per byte
    );
    CREATE INDEX op_profile_run ON op_profile(run_id);
    """,
    # v4: energy of the run's device over the timed window (--energy; docs/energy.md). Earlier
    # rows keep nulls: they were measured without energy.
    """
    ALTER TABLE runs ADD COLUMN energy_j REAL;              -- J, the run's device
    ALTER TABLE runs ADD COLUMN energy_window_s REAL;       -- s, the timed window
    ALTER TABLE runs ADD COLUMN avg_power_w REAL;           -- W = energy_j / energy_window_s
    ALTER TABLE runs ADD COLUMN energy_per_step_j REAL;     -- J per training step
    ALTER TABLE runs ADD COLUMN energy_per_sample_j REAL;   -- J per training example
    ALTER TABLE runs ADD COLUMN samples_per_j REAL;         -- training examples per J
    ALTER TABLE runs ADD COLUMN energy_method TEXT;
    ALTER TABLE runs ADD COLUMN energy_scope TEXT;
    ALTER TABLE runs ADD COLUMN energy_period_s REAL;       -- s, power sampling period
    ALTER TABLE runs ADD COLUMN idle_power_w REAL;          -- W, before the sweep; not subtracted
    ALTER TABLE runs ADD COLUMN energy TEXT;                -- JSON: devices, totals, sampling
    """,
    # v5: every timed run states its own quality (docs/methodology.md, "Quality"): a verdict,
    # its reasons, the machine's load around the timed window, and whether a low precision ran
    # without native hardware support. Older rows keep NULL quality (never rated).
    """
    ALTER TABLE runs ADD COLUMN quality TEXT CHECK (quality IN ('good', 'noisy'));
    ALTER TABLE runs ADD COLUMN quality_reasons TEXT;       -- JSON list of short reasons
    ALTER TABLE runs ADD COLUMN ci_half_rel REAL;           -- (ci_high - ci_low) / 2 / median
    ALTER TABLE runs ADD COLUMN iqr_rel REAL;               -- IQR / median
    ALTER TABLE runs ADD COLUMN others_cpu_frac REAL;       -- CPU used by other processes
    ALTER TABLE runs ADD COLUMN load TEXT;                  -- JSON: load around the window
    ALTER TABLE runs ADD COLUMN emulated INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX runs_quality ON runs(quality);
    """,
    # v6: calibrate and ops run in worker processes like training runs: a unit that crashes,
    # hangs or runs out of memory is a row with its status (a ceiling's value is then NULL), and
    # `task_key` (unit + settings + environment) lets a re-run skip what is already measured.
    """
    CREATE TABLE ceilings_v6 (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        device        TEXT NOT NULL,
        device_name   TEXT NOT NULL,
        fingerprint   TEXT NOT NULL,
        kind          TEXT NOT NULL CHECK (kind IN ('matmul', 'copy', 'triad')),
        precision     TEXT,
        value         REAL,                   -- NULL when status is not ok
        unit          TEXT NOT NULL,
        detail        TEXT,
        env           TEXT,
        measured_at   TEXT NOT NULL,
        status        TEXT NOT NULL DEFAULT 'ok',
        error         TEXT,
        task_key      TEXT
    );
    INSERT INTO ceilings_v6 (id, device, device_name, fingerprint, kind, precision, value, unit,
                             detail, env, measured_at)
        SELECT id, device, device_name, fingerprint, kind, precision, value, unit, detail, env,
               measured_at FROM ceilings;
    DROP TABLE ceilings;
    ALTER TABLE ceilings_v6 RENAME TO ceilings;
    CREATE INDEX ceilings_device ON ceilings(device_name, kind, precision);
    CREATE INDEX ceilings_task ON ceilings(task_key);
    ALTER TABLE ops ADD COLUMN task_key TEXT;
    CREATE INDEX ops_task ON ops(task_key);
    """,
    # Data-parallel runs (docs/scaling.md): N ranks, strategy, scaling, the slowest rank's
    # no_sync compute, an isolated all-reduce of the gradient bytes with its algbw/busbw
    # (nccl-tests), the overlap; earlier rows ran one process (procs = 1).
    """
    ALTER TABLE runs ADD COLUMN procs INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE runs ADD COLUMN strategy TEXT;              -- ddp, fsdp (NULL: one process)
    ALTER TABLE runs ADD COLUMN scaling TEXT;               -- weak, strong
    ALTER TABLE runs ADD COLUMN dist_backend TEXT;          -- gloo, nccl
    ALTER TABLE runs ADD COLUMN global_batch INTEGER;       -- examples per step, all ranks
    ALTER TABLE runs ADD COLUMN rank_batch INTEGER;         -- examples per step, one rank
    ALTER TABLE runs ADD COLUMN rank_threads INTEGER;       -- threads (pinned cores) per rank
    ALTER TABLE runs ADD COLUMN compute_nosync_s REAL;      -- s per step without gradient sync
    ALTER TABLE runs ADD COLUMN allreduce_bytes INTEGER;    -- gradient bytes, one flat buffer
    ALTER TABLE runs ADD COLUMN allreduce_s REAL;           -- s, isolated all-reduce of them
    ALTER TABLE runs ADD COLUMN allreduce_algbw REAL;       -- bytes/s = bytes / s
    ALTER TABLE runs ADD COLUMN allreduce_busbw REAL;       -- bytes/s = algbw * 2(n-1)/n
    ALTER TABLE runs ADD COLUMN overlap_frac REAL;          -- all-reduce hidden under compute
    ALTER TABLE runs ADD COLUMN failed_rank INTEGER;        -- the rank whose error ended it
    ALTER TABLE runs ADD COLUMN parallel TEXT;              -- JSON: per rank, size ladder
    CREATE INDEX runs_procs ON runs(procs);
    """,
    # modes (issue 17): what compiling a run's step cost and produced (docs/modes.md). Eager
    # rows, and every row before this migration, keep NULLs: nothing was compiled.
    """
    ALTER TABLE runs ADD COLUMN compile_cold_s REAL;        -- s, fresh inductor cache
    ALTER TABLE runs ADD COLUMN compile_warm_s REAL;        -- s, second process, cache kept
    ALTER TABLE runs ADD COLUMN graph_count INTEGER;
    ALTER TABLE runs ADD COLUMN graph_breaks INTEGER;
    ALTER TABLE runs ADD COLUMN graph_break_reasons TEXT;   -- JSON list
    ALTER TABLE runs ADD COLUMN recompiles INTEGER;
    ALTER TABLE runs ADD COLUMN cudagraphs INTEGER;
    ALTER TABLE runs ADD COLUMN compile_detail TEXT;        -- JSON: mode, caches, counters
    """,
    # infeed (issue 18): where each step's batch came from and what feeding it cost
    # (docs/infeed.md). Every earlier row trained on device data (synthetic, made once).
    """
    ALTER TABLE runs ADD COLUMN data_source TEXT NOT NULL DEFAULT 'device';
    ALTER TABLE runs ADD COLUMN loader_workers INTEGER;     -- DataLoader num_workers
    ALTER TABLE runs ADD COLUMN pin_memory INTEGER;
    ALTER TABLE runs ADD COLUMN prefetch_factor INTEGER;
    ALTER TABLE runs ADD COLUMN persistent_workers INTEGER;
    ALTER TABLE runs ADD COLUMN data_wait_s REAL;           -- s per step blocked in next()
    ALTER TABLE runs ADD COLUMN data_copy_s REAL;           -- s per step copying to the device
    ALTER TABLE runs ADD COLUMN infeed_share REAL;          -- (wait + copy) / window, in [0, 1]
    ALTER TABLE runs ADD COLUMN loader_examples_per_s REAL; -- the infeed alone, no model
    ALTER TABLE runs ADD COLUMN model_only_examples_per_s REAL; -- the model on device data
    ALTER TABLE runs ADD COLUMN input_bound INTEGER;
    ALTER TABLE runs ADD COLUMN host_cpu_cores REAL;        -- CPU s of run + workers / window s
    ALTER TABLE runs ADD COLUMN host_cpu_share REAL;        -- cores busy / cores allowed
    ALTER TABLE runs ADD COLUMN infeed TEXT;                -- JSON: dataset, cache, methods
    CREATE INDEX runs_data_source ON runs(data_source);
    """,
    # backends (issue 21, docs/jax.md): the framework of the run and, for JAX rows, what XLA
    # made of the step. Every earlier row ran on PyTorch; their XLA columns stay NULL.
    """
    ALTER TABLE runs ADD COLUMN backend TEXT NOT NULL DEFAULT 'torch';
    ALTER TABLE runs ADD COLUMN xla_lower_s REAL;           -- s, jit(step).trace().lower()
    ALTER TABLE runs ADD COLUMN xla_compile_s REAL;         -- s, lowered.compile()
    ALTER TABLE runs ADD COLUMN xla_flops REAL;             -- cost_analysis()['flops'], 1 step
    ALTER TABLE runs ADD COLUMN xla_bytes REAL;             -- cost_analysis()['bytes accessed']
    ALTER TABLE runs ADD COLUMN xla_flops_ratio REAL;       -- xla_flops / flops_analytic
    ALTER TABLE runs ADD COLUMN xla_flops_mismatch INTEGER; -- |ratio - 1| > 10 %
    ALTER TABLE runs ADD COLUMN xla_detail TEXT;            -- JSON: versions, platform, memory
    CREATE INDEX runs_backend ON runs(backend);
    """,
    # host profile (issue 35, docs/simulate.md "The host profile"): this host's dispatch costs
    # as `paradnn calibrate` measures them, for the step-time model's host timeline. One row a
    # measurement; a figure that could not be measured is NULL with its reason in `nulls`.
    """
    CREATE TABLE host_profile (
        id                  INTEGER PRIMARY KEY AUTOINCREMENT,
        device              TEXT NOT NULL,          -- cpu, cuda:0 (whose launches were timed)
        device_type         TEXT NOT NULL,          -- cpu, cuda
        device_name         TEXT NOT NULL,          -- CPU model or GPU name
        host                TEXT,                   -- the CPU model
        hostname            TEXT,
        fingerprint         TEXT NOT NULL,
        forward_op_s        REAL,                   -- s per eager forward torch call
        autograd_node_s     REAL,                   -- s per autograd node, backward
        optimizer_loop_s    REAL,                   -- s per parameter tensor, Adam loop
        optimizer_foreach_s REAL,                   -- s per parameter tensor, Adam foreach
        optimizer_fused_s   REAL,                   -- s per parameter tensor, Adam fused
        optimizer_step_s    REAL,                   -- s, the fixed cost of one step() call
        sync_s              REAL,                   -- s, one device synchronisation (CPU: 0)
        kernel_launch_s     REAL,                   -- s per kernel launch (CPU: NULL)
        quality             TEXT CHECK (quality IN ('good', 'noisy')),
        quality_reasons     TEXT,                   -- JSON list
        threads             INTEGER,
        detail              TEXT,                   -- JSON: ladders, intervals, counts, load
        nulls               TEXT,                   -- JSON: field -> reason it is NULL
        env                 TEXT,                   -- JSON
        measured_at         TEXT,
        status              TEXT NOT NULL DEFAULT 'ok',
        error               TEXT,
        task_key            TEXT
    );
    CREATE INDEX host_profile_host ON host_profile(hostname, device_type);
    CREATE INDEX host_profile_task ON host_profile(task_key);
    """,
    # precision policy (issue 35, docs/optimizers.md): every earlier row kept fp32 master
    # weights and ran its 16-bit precisions under autocast.
    """
    ALTER TABLE runs ADD COLUMN precision_policy TEXT NOT NULL DEFAULT 'mixed';
    """,
    # the host floor (issue 42, docs/simulate.md "The host profile"): what a step costs once,
    # an autocast cast, a fused recurrent call and GradScaler, measured on the device itself
    # (whose figures then hold their kernels' launches). Earlier rows measured none of them on
    # the CPU's tensors: NULL (the model composes them) and launches not included.
    """
    ALTER TABLE host_profile ADD COLUMN step_s REAL;        -- s once a training step
    ALTER TABLE host_profile ADD COLUMN cast_s REAL;        -- s per autocast cast, fwd + bwd
    ALTER TABLE host_profile ADD COLUMN rnn_call_s REAL;    -- s per fused RNN call, fwd + bwd
    ALTER TABLE host_profile ADD COLUMN scaler_s REAL;      -- s, GradScaler once a step
    ALTER TABLE host_profile ADD COLUMN launches_included INTEGER NOT NULL DEFAULT 0;
    """,
    # ceilings that are ceilings (issue 41, docs/ops.md): a run faster than its measured ceiling
    # beats it; the flag is stored beside the utilization (kept as is, above 1 too) and set on
    # the rows stored before it from the utilization they hold.
    """
    ALTER TABLE runs ADD COLUMN ceiling_beaten INTEGER;
    UPDATE runs SET ceiling_beaten = (utilization_measured > 1)
        WHERE utilization_measured IS NOT NULL;
    """,
    # claims (issue 46, docs/runner.md "Two runs on one database"): a sweep claims a run key
    # before measuring it, so another sweep on the same database skips it instead of measuring
    # it twice. A claim names its owner (host, pid and the pid's start time, so a reused pid is
    # not taken for the owner) and expires unless renewed: a killed owner's claims are taken
    # over at once on its own host (its pid is gone), elsewhere once they expire.
    """
    CREATE TABLE claims (
        run_key     TEXT PRIMARY KEY,
        sweep       TEXT,
        host        TEXT NOT NULL,
        pid         INTEGER NOT NULL,
        pid_start   TEXT,                   -- /proc/PID/stat start time (NULL: not readable)
        token       TEXT NOT NULL,          -- the claiming sweep (one process may run several)
        claimed_at  REAL NOT NULL,          -- Unix seconds
        expires_at  REAL NOT NULL           -- Unix seconds; renewed while the owner runs
    );
    CREATE INDEX claims_token ON claims(token);
    """,
    # cuDNN's autotuner as a study axis (issue 44, docs/modes.md): every earlier CUDA run had it
    # on (a CPU run has no cuDNN, whatever the setting).
    """
    ALTER TABLE runs ADD COLUMN cudnn_benchmark INTEGER NOT NULL DEFAULT 1;
    """,
    # baselines (issue 45, docs/baselines.md): a named set of runs of this database, each one
    # attempt (its row id), that `compare --baseline NAME` compares the newest runs against.
    """
    CREATE TABLE baselines (
        name        TEXT NOT NULL,
        run_id      INTEGER NOT NULL REFERENCES runs(id),
        saved_at    TEXT NOT NULL,              -- ISO 8601, UTC
        PRIMARY KEY (name, run_id)
    );
    """,
]

LATEST = len(MIGRATIONS)
