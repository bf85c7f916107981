"""Queued launches in the worker process (submit/collect): order, faults, hangs, re-sent launches.
No GPU: the executor in the worker is scripted (tests/fakes_worker.py)."""
from __future__ import annotations

from collections import deque

import pytest

from fakes_worker import Scripted, launch
from parity.executors.cpu import CpuExecutor
from parity.executors.worker import IsolatedExecutor
from parity.run.cases import Filters, load_sweep
from parity.run.engine import PIPELINE_DEPTH, run_cases


@pytest.fixture
def ex():
    e = IsolatedExecutor(Scripted, timeout_s=2.0)
    yield e
    e.close()


def test_answers_come_in_submission_order_across_a_dying_worker(ex):
    names = ["ok_a", "ok_a", "die_b", "ok_a", "missing_c", "ok_d"]
    for i, k in enumerate(names):
        ex.submit(launch(k, i))
    got = [ex.collect() for _ in names]
    assert [r.status for r in got] == ["ok", "ok", "crash", "ok", "missing", "ok"]
    assert "exit code 3" in got[2].message and "die_b" in got[2].message
    assert [float(r.outputs["out"][0]) for r in got if r.status == "ok"] == [0.0, 2.0, 6.0, 10.0]
    assert got[0].message == got[1].message != got[3].message == got[5].message   # re-sent to a new worker
    assert ex.restarts == 1


def test_a_worker_that_dies_between_two_looks_still_answers_in_order(ex, monkeypatch):
    """The worker dies after submit() saw it alive: the launch goes in behind the dead one's, and
    the answers keep their slots (before, the check was made twice; a death between the two looks
    restarted the worker under the queued launch, whose slot then took the next launch's answer)."""
    ex.submit(launch("ok_a", 1))
    ex.submit(launch("die_b", 2))
    proc = ex._proc
    proc.join(10)
    assert proc.exitcode == 3
    alive, stale = ex._alive, iter([True])                # the first look is the stale one
    monkeypatch.setattr(ex, "_alive", lambda: next(stale, None) or alive())
    ex.submit(launch("ok_a", 3))
    got = [ex.collect() for _ in range(3)]
    assert [r.status for r in got] == ["ok", "crash", "ok"]
    assert float(got[2].outputs["out"][0]) == 6.0 and ex.restarts == 1


def test_timing_sends_the_launch_to_a_worker_that_replaced_the_one_that_ran_it(ex, monkeypatch):
    """time() reuses the worker's last launch; a worker that died after the look is replaced by one
    that never ran it, and gets the launch itself (before, the row was silently `not timed`)."""
    from parity.timing import TimingOptions
    first = launch("ok_a", 1)
    assert ex.run(first).status == "ok"
    call = ex._call

    def dies_after_the_look(msg, payload, timeout):
        if msg == "time" and payload[0] is None:          # "the launch it just ran": it dies now
            ex._proc.kill()
            ex._proc.join(10)
        return call(msg, payload, timeout)
    monkeypatch.setattr(ex, "_call", dies_after_the_look)
    with pytest.raises(RuntimeError, match="level fake cannot be timed"):   # time_launch ran on it
        ex.time(first, TimingOptions())


def test_a_hang_times_out_and_the_launches_behind_it_still_run(ex):
    for i, k in enumerate(["ok_a", "hang_b", "ok_a"]):
        ex.submit(launch(k, i))
    got = [ex.collect() for _ in range(3)]
    assert [r.status for r in got] == ["ok", "timeout", "ok"]
    assert "no answer after 2 s" in got[1].message
    assert float(got[2].outputs["out"][0]) == 4.0


def test_a_lost_context_restarts_the_worker_before_the_next_launch(ex):
    for i, k in enumerate(["lost_a", "ok_a"]):
        ex.submit(launch(k, i))
    first, second = ex.collect(), ex.collect()
    assert (first.status, first.message) == ("crash", "context lost")
    assert second.status == "ok" and ex.restarts == 1


def test_run_refuses_to_mix_with_queued_launches(ex):
    ex.submit(launch("ok_a", 1))
    with pytest.raises(RuntimeError, match="not collected"):
        ex.run(launch("ok_a", 2))
    assert ex.collect().status == "ok"
    assert ex.run(launch("ok_a", 2)).status == "ok"
    with pytest.raises(RuntimeError, match="without a submitted launch"):
        ex.collect()


class QueuedCpu(CpuExecutor):
    """The cpu level behind submit/collect, as the engine drives an isolated GPU worker."""

    def __init__(self):
        super().__init__()
        self.queue: deque = deque()
        self.deepest = 0

    def submit(self, launch) -> None:
        self.queue.append(launch)
        self.deepest = max(self.deepest, len(self.queue))

    def collect(self):
        return self.run(self.queue.popleft())


def test_engine_queues_launches_and_keeps_case_order():
    cases = load_sweep("smoke", Filters(ops=["unary.neg", "reduce.sum", "binary.minimum"]))
    assert {c.catalog_op.spec.elementwise for c in cases} == {True, False}       # queued and one-at-a-time mixed
    plain = run_cases(cases, CpuExecutor())
    queued_ex = QueuedCpu()
    queued = run_cases(cases, queued_ex)
    key = lambda r: (r["case_id"], r["verdict"], r.get("max_ulp"), r.get("n_bad"))
    assert [key(r) for r in queued] == [key(r) for r in plain]
    assert queued_ex.deepest == PIPELINE_DEPTH and not queued_ex.queue
    assert all(r["verdict"] == "pass" for r in queued)


@pytest.mark.slow
def test_a_warm_spare_takes_over_after_a_fault_at_once():
    import time
    from fakes_worker import SlowStart
    ex = IsolatedExecutor(SlowStart, timeout_s=5.0)
    try:
        assert ex.run(launch("ok_a", 1)).status == "ok"          # pays the first start
        time.sleep(SlowStart.START_S + 0.5)                       # the spare warms up meanwhile
        times = []
        for i in range(3):                                         # each fault promotes a warm spare
            t0 = time.perf_counter()
            assert ex.run(launch("die_b", i)).status == "crash"
            assert ex.run(launch("ok_a", i)).status == "ok"
            times.append(time.perf_counter() - t0)
            time.sleep(SlowStart.START_S + 0.5)
        assert ex.restarts == 3 and max(times) < 0.5, times
    finally:
        ex.close()
    assert not ex._spares


def test_without_a_spare_a_fault_waits_for_a_fresh_worker():
    import time
    from fakes_worker import SlowStart
    ex = IsolatedExecutor(SlowStart, timeout_s=5.0, spare=False)
    try:
        assert ex.run(launch("ok_a", 1)).status == "ok"
        t0 = time.perf_counter()
        assert ex.run(launch("die_b", 2)).status == "crash"
        assert ex.run(launch("ok_a", 3)).status == "ok"
        assert time.perf_counter() - t0 > SlowStart.START_S
    finally:
        ex.close()


@pytest.mark.slow
def test_dense_faults_grow_the_spares():
    """Faults faster than a worker starts: the executor keeps more spares, so a burst of faults
    costs about one start, not one start per fault."""
    import time
    from fakes_worker import SlowStart
    ex = IsolatedExecutor(SlowStart, timeout_s=5.0)
    try:
        t0 = time.perf_counter()
        for i in range(8):
            assert ex.run(launch("die_b", i)).status == "crash"
            assert ex.run(launch("ok_a", i)).status == "ok"
        took = time.perf_counter() - t0
        assert ex._want_spares > 1 and ex.restarts == 8
        assert took < 8 * SlowStart.START_S * 0.75, took       # one start per fault would be 8 x START_S
    finally:
        ex.close()


def test_prestart_overlaps_the_first_worker_s_start():
    import time
    from fakes_worker import SlowStart
    ex = IsolatedExecutor(SlowStart, timeout_s=5.0)
    try:
        ex.prestart()
        ex.prestart()                                              # once: no second process
        assert len(ex._spares) == 1
        time.sleep(SlowStart.START_S + 0.5)                        # the caller compiles meanwhile
        t0 = time.perf_counter()
        assert ex.run(launch("ok_a", 1)).status == "ok"
        assert time.perf_counter() - t0 < 0.5 and ex.restarts == 0
    finally:
        ex.close()


def test_renew_rereads_the_suite_in_the_same_process(tmp_path):
    from fakes_worker import FromFile
    path = tmp_path / "suite"
    path.write_text("1")
    ex = IsolatedExecutor(FromFile, timeout_s=5.0, spare=False, path=str(path))
    try:
        first = ex.run(launch("ok_a", 0))
        path.write_text("2")
        assert ex.run(launch("ok_a", 0)).outputs["out"][0] == 1     # the loaded code, until renewed
        ex.renew()
        again = ex.run(launch("ok_a", 0))
        assert again.outputs["out"][0] == 2 and again.message == first.message   # same worker pid
        assert ex.restarts == 0
    finally:
        ex.close()


def test_a_worker_whose_parent_is_gone_exits_without_a_traceback(capfd):
    """An interrupted `parity mutate` leaves with os._exit while its GPU workers are starting: a
    worker's "ready" then meets a closed pipe, which must end it quietly, not print a traceback."""
    import multiprocessing as mp
    import signal
    from parity.executors.worker import _serve
    parent, child = mp.Pipe()
    parent.close()
    before = signal.getsignal(signal.SIGINT)
    try:
        _serve(child, CpuExecutor, {})
    finally:
        signal.signal(signal.SIGINT, before)
    assert "Traceback" not in capfd.readouterr().err
