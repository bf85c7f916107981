"""The GitHub Action, the example workflow for a port and the pre-commit hook: their structure,
and the action's scripts run as a runner would run them (install, run, diff, exit code)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="pip install pyyaml (in the dev extra)")

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
EXAMPLE = ROOT / "docs" / "examples" / "parity.yml"
HOOKS = ROOT / ".pre-commit-hooks.yaml"
_EXPR = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")


def load(path: Path):
    return yaml.safe_load(path.read_text())


def steps_by_name(action: dict) -> dict[str, dict]:
    return {s["name"]: s for s in action["runs"]["steps"]}


def test_action_is_a_composite_with_the_documented_inputs_and_steps():
    a = load(ACTION)
    assert a["runs"]["using"] == "composite"
    assert {"hip-src", "sweep", "levels", "baseline", "extra-args"} <= set(a["inputs"])
    assert all("description" in v and "default" in v for v in a["inputs"].values())
    assert list(steps_by_name(a)) == ["Set up Python", "Install parity", "Run parity", "Compare with the baseline",
                                      "Comment on the pull request", "Upload the reports",
                                      "Fail on failures or regressions"]
    steps = steps_by_name(a)
    for s in a["runs"]["steps"]:
        if "run" in s:
            assert s["shell"] == "bash", s["name"]               # composite run steps must name a shell
            assert "${{" not in s["run"], s["name"]              # inputs via env only: no injection
        else:
            assert re.fullmatch(r"[\w-]+/[\w-]+@v\d+", s["uses"]), s["name"]
    assert "parity \"${args[@]}\"" in steps["Run parity"]["run"]
    assert "parity diff" in steps["Compare with the baseline"]["run"]
    assert steps["Compare with the baseline"]["if"] == "inputs.baseline != '' && steps.run.outputs.report-dir != ''"
    assert "gh api" in steps["Comment on the pull request"]["run"]
    assert steps["Upload the reports"]["uses"].startswith("actions/upload-artifact@")
    assert {"report-dir", "run-exit-code", "diff-exit-code"} <= set(a["outputs"])
    for out in a["outputs"].values():                          # outputs point at steps that exist
        sid = _EXPR.search(out["value"]).group(1).split(".")[1]
        assert sid in {s.get("id") for s in a["runs"]["steps"]}


def test_example_workflow_runs_each_level_on_its_runner():
    w = load(EXAMPLE)
    on = w.get("on", w.get(True))                              # YAML 1.1 reads `on` as true
    assert "pull_request" in on
    assert w["permissions"]["pull-requests"] == "write"
    jobs = w["jobs"]
    runs_on = {name: j["runs-on"] for name, j in jobs.items()}
    assert runs_on == {"static-and-cpu": "ubuntu-latest", "hip-on-nvidia": ["self-hosted", "nvidia"],
                       "amd": ["self-hosted", "rocm"]}

    def action_step(job: str) -> dict:
        (s,) = [s for s in jobs[job]["steps"] if s.get("uses", "").split("@")[0].endswith("/parity")]
        return s
    assert action_step("static-and-cpu")["with"]["levels"] == "cpu,amd-static"      # the port's code, compiled
    assert action_step("hip-on-nvidia")["with"]["levels"] == "hip-on-nvidia"
    assert action_step("amd")["with"]["levels"] == "amd"
    for job in ("hip-on-nvidia", "amd"):                      # a lost GPU must not be a green job
        assert f"--require {action_step(job)['with']['levels']}" in action_step(job)["with"]["extra-args"]
    static = " ".join(s.get("run", "") for s in jobs["static-and-cpu"]["steps"])
    assert "apt-get install" in static and "hipcc" in static and "parity compile" in static
    for job in jobs.values():
        assert job["steps"][0]["uses"].startswith("actions/checkout@")


def test_drift_workflow_runs_the_drift_check_on_candle_main_weekly(tmp_path):
    """docs/examples/candle-drift.yml: a scheduled job, Candle main's kernels checked out, and the
    very command that goes red on an upstream change (its run line is run here on an upstream with
    one kernel more than the record: exit 1)."""
    import os
    import shlex
    import subprocess
    import sys
    w = load(ROOT / "docs" / "examples" / "candle-drift.yml")
    on = w.get("on", w.get(True))
    assert on["schedule"][0]["cron"] and "workflow_dispatch" in on
    steps = w["jobs"]["drift"]["steps"]
    assert steps[0]["with"]["repository"] == "huggingface/candle"
    (run,) = [s["run"] for s in steps if "--drift" in s.get("run", "")]
    cmd = next(line for line in run.splitlines() if line.strip().startswith("parity coverage"))
    argv = [a for a in shlex.split(cmd.split("|")[0]) if a != "2>&1"]
    assert argv[:2] == ["parity", "coverage"] and "--drift" in argv
    src = tmp_path / "candle" / "candle-kernels" / "src"
    src.mkdir(parents=True)
    from parity.core.resources import data_dir
    from parity.profiles.candle import UPSTREAM_RECORD
    from parity.suite.coverage import record_files
    for f in record_files(json.loads((data_dir() / UPSTREAM_RECORD).read_text())):   # Candle's files (emptied):
        (src / f).parent.mkdir(parents=True, exist_ok=True)                      # a tree of Candle's, which
        (src / f).write_text("")                                                  # the check insists on
    (src / "x.cu").write_text('extern "C" __global__ void brand_new_f32(const float *x) {}\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "parity", *argv[1:]], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 1, p.stderr
    assert "new upstream\tbrand_new_f32\tx.cu:1" in p.stdout


def test_pre_commit_hooks():
    hook, static = load(HOOKS)
    assert static["id"] == "parity-amd-static" and static["entry"] == "parity compile --since HEAD --summary"
    assert static["pass_filenames"] is False and re.compile(static["files"]).search("kernels/unary.hip")
    assert hook["id"] == "parity" and hook["language"] == "python"
    assert hook["entry"] == "parity run --since HEAD --levels auto -q"
    assert hook["pass_filenames"] is False
    files = re.compile(hook["files"])
    assert all(files.search(f) for f in ("kernels/unary.hip", "common.h", "a.cuh", "b.cu", "ops.def", "k/refs.py",
                                         "k/parity-kernels.toml", "parity-port.toml"))   # (a references module)
    assert not any(files.search(f) for f in ("README.md", "cases/pr.toml", "a.hipx"))


def test_actionlint_accepts_the_action_s_workflow():
    exe = shutil.which("actionlint")
    if not exe:
        pytest.skip("actionlint not installed (https://github.com/rhysd/actionlint)")
    r = subprocess.run([exe, "-no-color", str(EXAMPLE)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


# ------------------------------------------------------------------- the action's scripts, run
class Runner:
    """Runs the action's `run:` steps like a runner: inputs and step outputs through `${{ }}`
    in the step's `env`, GITHUB_OUTPUT / GITHUB_STEP_SUMMARY files, bash -eo pipefail."""

    def __init__(self, action: dict, inputs: dict[str, str], work: Path, action_path: Path, path_env: str):
        self.steps, self.work, self.path_env = steps_by_name(action), work, path_env
        self.ctx = {"github.action_path": str(action_path), "github.job": "test", "github.token": "",
                    "github.event.pull_request.number": ""}
        for k, v in action["inputs"].items():
            self.ctx[f"inputs.{k}"] = inputs.get(k, str(v["default"]))
        self.summary = work / "step_summary.md"

    def expr(self, s: str) -> str:
        return _EXPR.sub(lambda m: self.expr(self.ctx[m.group(1)]), str(s))

    def run(self, name: str, step_id: str | None = None) -> subprocess.CompletedProcess:
        step = self.steps[name]
        out = self.work / f"output-{step_id or 'x'}"
        out.write_text("")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GITHUB_ACTIONS")}
        env.update({k: self.expr(v) for k, v in step.get("env", {}).items()})
        env.update(PATH=self.path_env, GITHUB_OUTPUT=str(out), GITHUB_STEP_SUMMARY=str(self.summary),
                   COLUMNS="120")
        script = self.work / "step.sh"
        script.write_text(step["run"])
        r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=self.work,
                           env=env, capture_output=True, text=True, timeout=300)
        for line in out.read_text().splitlines():
            k, _, v = line.partition("=")
            self.ctx[f"steps.{step_id}.outputs.{k}"] = v
        return r


@pytest.mark.slow
def test_action_scripts_install_run_diff_and_decide(tmp_path):
    pytest.importorskip("build", reason="pip install build (in the dev extra)")
    from test_packaging import _skip
    action_path = tmp_path / "action"
    shutil.copytree(ROOT, action_path, symlinks=True, ignore=_skip)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    path_env = f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"
    work = tmp_path / "work"
    work.mkdir()
    action = load(ACTION)
    ctx_run = {"levels": "cpu", "extra-args": "--ops 'unary.n*' --dtypes f32"}     # quoted: no glob, one word
    r1 = Runner(action, ctx_run, work, action_path, path_env)
    r = r1.run("Install parity")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("parity, version " + __import__("parity").__version__)
    assert (venv / "bin" / "parity").exists()                 # installed into the venv, not elsewhere
    r = r1.run("Run parity", "run")
    assert r.returncode == 0, r.stdout + r.stderr
    report = Path(work, r1.ctx["steps.run.outputs.report-dir"])
    assert r1.ctx["steps.run.outputs.rc"] == "0"
    for f in ("summary.md", "junit.xml", "results.json", "index.html"):
        assert (report / f).is_file(), f
    assert "parity" in r1.summary.read_text()

    # a second run compared with the first: no regression, the job passes
    r2 = Runner(action, {**ctx_run, "baseline": str(report / "results.json")}, work, action_path, path_env)
    import time
    time.sleep(1.1)                                             # a new report folder (second resolution)
    assert r2.run("Run parity", "run").returncode == 0
    assert r2.ctx["steps.run.outputs.report-dir"] != r1.ctx["steps.run.outputs.report-dir"]
    r = r2.run("Compare with the baseline", "diff")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r2.ctx["steps.diff.outputs.rc"] == "0" and "No regressions." in r.stdout
    assert (work / r2.ctx["steps.run.outputs.report-dir"] / "diff.txt").is_file()
    assert r2.run("Fail on failures or regressions").returncode == 0

    # a run that writes no report never publishes an older run's (the folder's newest was)
    r3 = Runner(action, {**ctx_run, "extra-args": "--require hip-on-nvidia"}, work, action_path, path_env)
    r = r3.run("Run parity", "run")
    assert r.returncode == 2 and r3.ctx["steps.run.outputs.rc"] == "2", r.stdout + r.stderr
    assert "steps.run.outputs.report-dir" not in r3.ctx and "::error title=parity::parity run wrote no report" in r.stdout
    r = Runner(action, {**ctx_run, "extra-args": "--ops 'unary.neg"}, work, action_path, path_env).run("Run parity")
    assert r.returncode == 2 and "extra-args is not a list of words" in r.stdout
    # --out in extra-args: the reports went elsewhere and the action said "nothing was checked", exit 0
    r = Runner(action, {**ctx_run, "extra-args": "--ops unary.neg --out=elsewhere"}, work, action_path,
               path_env).run("Run parity")
    assert r.returncode == 2 and "extra-args may not hold --out=elsewhere" in r.stdout and not (work / "elsewhere").exists()

    # the decision: failures without a baseline, regressions with one; a run that did not finish always
    # fails; one that checked nothing (no report, exit 0) does not
    for run_rc, diff_rc, baseline, dir_, want in [
            ("1", "", "", "r", 1), ("0", "", "", "r", 0), ("1", "0", "b.json", "r", 0), ("0", "1", "b.json", "r", 1),
            ("2", "", "", "", 2), ("2", "0", "b.json", "r", 2), ("130", "0", "b.json", "r", 130),
            ("3", "0", "b.json", "r", 3), ("0", "", "b.json", "", 0),
            ("129", "0", "b.json", "r", 129), ("137", "0", "b.json", "r", 137)]:   # hung up, killed: never a pass
        d = Runner(action, {"baseline": baseline}, work, action_path, path_env)
        d.ctx.update({"steps.run.outputs.rc": run_rc, "steps.diff.outputs.rc": diff_rc,
                      "steps.run.outputs.report-dir": dir_})
        assert d.run("Fail on failures or regressions").returncode == want, (run_rc, diff_rc, baseline, dir_)
