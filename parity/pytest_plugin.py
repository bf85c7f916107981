"""pytest plugin: a parity sweep as pytest tests, one per case, named by its case ID.

    pytest --parity-sweep smoke [--parity-level cpu] [--parity-ops 'binary.*'] [-m parity] [-n auto]

Registered through the `pytest11` entry point. Without --parity-sweep it only adds its options:
nothing of parity is imported, so ordinary pytest runs pay nothing for it.

The cases become items of one `parity[SWEEP]` collector added to the session during collection
(node IDs `parity[smoke]::binary.minimum/f16/contiguous/special/s0`), in the sweep's stable
order, so every pytest-xdist worker collects the same list. Each item runs its case on the level
(one executor per process, built on first use): a failing verdict is a test failure whose message
is the worst-element line plus the repro command; an unavailable level skips, and so do amd-static's
compiled cases and the cpu reference's passes (no kernel of the suite ran: never a PASSED test, as in
`parity run`'s junit.xml); a case matched by --parity-baseline is marked xfail (XPASS when it passes;
a failure with --parity-strict).
"""
from __future__ import annotations

import pytest

_KEY = pytest.StashKey[dict]()


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("parity", "parity: kernel parity cases as tests")
    g.addoption("--parity-sweep", default=None, metavar="SWEEP",
                help="Run this parity sweep (smoke, pr, nightly or a TOML path) as tests.")
    g.addoption("--parity-level", default="auto", metavar="LEVEL",
                help="Level to run the cases on: auto (the first of hip-on-nvidia, amd, amd-static this machine "
                     "has), hip-on-nvidia, amd, amd-static, cuda, or cpu (the reference's case machinery alone: "
                     "no kernel of the suite runs) [default: auto].")
    g.addoption("--parity-ops", default=None, metavar="PAT", help="Op glob patterns, comma separated.")
    g.addoption("--parity-dtypes", default=None, metavar="LIST", help="Dtypes, comma separated.")
    g.addoption("--parity-hip-src", default=None, metavar="DIR", help="HIP kernel suite folder.")
    g.addoption("--parity-cuda-src", default=None, metavar="DIR", help="CUDA kernel suite folder.")
    g.addoption("--parity-baseline", default=None, metavar="FILE",
                help="Known failures (parity baseline file): matching cases are marked xfail.")
    g.addoption("--parity-executor", default=None, metavar="MODULE:CLASS",
                help="An Executor class to run instead of the level's (a custom or deliberately broken subject).")
    g.addoption("--parity-strict", action="store_true", help="With --parity-baseline: XPASS fails (strict xfail).")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("parity_sweep", None):
        config.addinivalue_line("markers", "parity: a parity kernel case (from --parity-sweep)")
        config.pluginmanager.register(_Session(config), "parity-session")


class CaseFailed(Exception):
    def __init__(self, row: dict):
        super().__init__(row.get("message"))
        self.row = row

    def line(self) -> str:
        r = self.row
        msg = str(r.get("message") or "").splitlines()
        return (f"{r['verdict']}: {msg[0] if msg else '(no message)'}\n"
                f"kernel {r.get('kernel')}; repro: parity repro {r['case_id']} --level {r['level']}")


class ParitySweep(pytest.Collector):
    def __init__(self, *, cases=(), **kw):
        super().__init__(**kw)
        self.cases = list(cases)

    def collect(self):
        return [ParityCase.from_parent(self, name=c.id, case=c) for c in self.cases]


class ParityCase(pytest.Item):
    def __init__(self, *, case, **kw):
        super().__init__(**kw)
        self.case = case
        self.add_marker("parity")

    def runtest(self) -> None:
        from parity.core.row import Verdict
        from parity.executors.base import Static
        from parity.run.engine import run_case, static_row
        from parity.run.results import FAILING
        lv = self.config.stash[_KEY]["level"]
        if isinstance(lv.executor, Static):
            row = static_row(self.case, lv.executor, lv.availability.device)
        else:
            row = run_case(self.case, lv.executor, lv.availability.device)
        self.user_properties.append(("verdict", row["verdict"]))
        if row["verdict"] == Verdict.UNAVAILABLE:
            pytest.skip(row.get("message") or "unavailable")
        if row["verdict"] == Verdict.COMPILED:          # compiled, not executed: never a pass
            pytest.skip(f"compiled, not executed ({lv.name}): {row.get('message') or ''}")
        if row["verdict"] in FAILING:
            raise CaseFailed(row)
        from parity.run.levels import REFERENCE, role
        if role(lv.name) == REFERENCE and not self.config.getoption("parity_executor"):
            pytest.skip(f"the reference alone ({lv.name}): no kernel of the suite ran")   # never a pass of the port
        if row.get("not_launched"):                     # the host's refusal, right; no kernel ran
            pytest.skip(row.get("message") or "not launched")

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CaseFailed):
            return excinfo.value.line()
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"parity {self.case.id}"


AUTO = ("hip-on-nvidia", "amd", "amd-static")     # the levels that run or compile the suite's kernels


def _auto_level(subj):
    """The first level of AUTO this machine has; a usage error when none: the cpu level alone
    verifies none of the suite's code, so it runs only when asked for by name."""
    from parity.run.levels import WHAT_RUNS_IT, make
    reasons = []
    for name in AUTO:
        lv = make(name, subj.hip_src, subj.cuda_src, suite=subj.suite)
        if lv.availability.available:
            return lv
        reasons.append(f"{name}: {lv.availability.reason}")
    raise pytest.UsageError(f"parity: no level here runs or compiles the suite's kernels ({'; '.join(reasons)}): "
                            f"{WHAT_RUNS_IT}. --parity-level cpu runs the reference's case machinery alone.")


def _executor(spec: str):
    """An instance of --parity-executor MODULE:CLASS; a usage error for one that cannot be made."""
    import importlib
    mod, _, cls = spec.partition(":")
    if not mod or not cls:
        raise pytest.UsageError(f"--parity-executor {spec!r}: expected MODULE:CLASS, e.g. my_port.executor:Broken")
    try:
        return getattr(importlib.import_module(mod), cls)()
    except Exception as e:          # (ImportError, AttributeError, TypeError from its __init__, ...)
        raise pytest.UsageError(f"--parity-executor {spec}: {type(e).__name__}: {e}") from None


class _Session:
    def __init__(self, config: pytest.Config):
        self.config = config
        self._subj = None                          # the suite (_subject), worked out once

    @pytest.hookimpl(tryfirst=True)            # before -k/-m deselection sees the item list
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list) -> None:
        from parity.run.cases import Filters
        from parity.run.session import SessionError, csv_list, select_cases
        sweep = config.getoption("parity_sweep")
        profile = self._subject().profile            # a port's declared profile, as `parity run` takes it
        try:
            cases = select_cases(sweep, Filters(csv_list(config.getoption("parity_ops")),
                                                csv_list(config.getoption("parity_dtypes")), profile=profile),
                                 profile=profile, allow_empty=True)
        except SessionError as e:
            raise pytest.UsageError(f"--parity-sweep {sweep}: {e}") from None
        from parity.render import baseline
        try:
            known = baseline.load_optional(config.getoption("parity_baseline"))
        except ValueError as e:
            raise pytest.UsageError(str(e)) from None
        level = self._state()["level"].name    # no level that verifies anything: a usage error now
        known = baseline.with_stated(known, {c.op for c in cases}, [level])     # + what the ops state
        strict = config.getoption("parity_strict")
        node = ParitySweep.from_parent(session, name=f"parity[{sweep}]", nodeid=f"parity[{sweep}]",
                                       cases=cases)
        for item in node.collect():
            entry = known.match(item.case.id, level) if known else None
            if entry is not None:
                item.add_marker(pytest.mark.xfail(reason=entry.reason or "parity baseline", strict=strict))
            items.append(item)

    def _subject(self):
        """The suite, its port and profile, as `parity run --hip-src/--cuda-src` work them out (a folder
        that does not exist is a usage error, not a sweep of `missing` kernels or a reference-only pass)."""
        subj = self._subj
        if subj is None:
            from parity.run.session import SessionError, subject
            try:
                subj = subject(self.config.getoption("parity_hip_src"), self.config.getoption("parity_cuda_src"))
                subj.check_folders()
            except SessionError as e:
                raise pytest.UsageError(f"parity: {e}") from None
            self._subj = subj
        return subj

    def _state(self) -> dict:
        st = self.config.stash.get(_KEY, None)
        if st is None:
            from parity.core.suggest import unknown
            from parity.run.levels import ALL_LEVELS as LEVELS
            from parity.run.session import SessionError, build_levels
            name = self.config.getoption("parity_level")
            if name not in LEVELS + ("auto",):
                raise pytest.UsageError(f"--parity-level: {unknown('level', name, ('auto',) + LEVELS)}")
            custom = self.config.getoption("parity_executor")
            subj = self._subject()
            if custom:
                from parity.executors.base import Availability
                from parity.run.levels import Level
                lv = Level("cpu" if name == "auto" else name, Availability(True, device=custom), _executor(custom))
            elif name == "auto":
                lv = _auto_level(subj)
            else:
                try:                                   # a named level that cannot run: as `parity run --levels`
                    (lv,) = build_levels([name], subj, named="--parity-level")
                except SessionError as e:
                    raise pytest.UsageError(f"--parity-level {name}: {e}") from None
            st = {"level": lv}
            self.config.stash[_KEY] = st
        return st

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item) -> None:
        if isinstance(item, ParityCase):
            self._state()

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        return [self._what_runs()]

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config) -> None:
        terminalreporter.write_line(self._what_runs())

    def _what_runs(self) -> str:
        """What the parity items prove on this level (parity.run.levels.PROVES), said in the header and again last."""
        from parity.run.levels import PROVES, role
        try:
            lv = self._state()["level"]
        except pytest.UsageError as e:
            return str(e)
        return f"parity level {lv.name}: {PROVES[role(lv.name)]}"

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        st = config.stash.get(_KEY, None)
        if st and st["level"].executor is not None:
            st["level"].executor.close()
