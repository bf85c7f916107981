"""Known-failure baselines: failures a team has accepted (with a reason) stop failing the run.

A baseline is a TOML or JSON file of entries {pattern, level?, reason}: `pattern` is an fnmatch
glob over case IDs (`binary.minimum/f16/*`), `level` an optional glob over level names.

    # parity baseline (TOML)
    [[known]]
    pattern = "binary.minimum/f16/*"
    level = "hip-on-nvidia"
    reason = "NaN handling of __hmin, tracked in #123"

`apply` turns a failing case that matches an entry into `xfail` (the original verdict is kept in
the `raw_verdict` column, the reason in `baseline_reason`). A *passing* case that matches becomes
`xpass`: reported, not failing, unless `strict`, where it is `xpass-strict` (in results.FAILING) so
that a fixed bug forces the baseline to be trimmed (a reference level's pass, cpu's, only for an
entry that names that level); under `strict` so is a matching amd-static row that now compiles (the
missing kernel or compile error an amd-static entry accepted is gone).
"""
from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

from parity import profiles
from parity.core import files, toml
from parity.core.row import Verdict
from parity.core.suggest import unknown
from parity.run.levels import ALL_LEVELS, EXECUTES, REFERENCE, ROLES, role
from parity.run.results import FAILING, Results

SCHEMA = "parity.baseline/1"
PLACEHOLDER = "TODO: why this failure is accepted (issue link)"


@dataclass(frozen=True)
class Entry:
    pattern: str
    level: str | None = None
    reason: str = ""
    stated: bool = False           # stated by the op itself (Op.known), not by a baseline file

    def compile_only(self) -> bool:
        """Whether the entry is about compiling alone: its level glob takes amd-static and no level that runs
        the suite (`amd*` also takes a ROCm GPU's runtime failures, which a compile cannot clear)."""
        if self.level is None or not fnmatch.fnmatchcase("amd-static", self.level):
            return False
        return not any(fnmatch.fnmatchcase(lv, self.level) for lv, r in ROLES.items() if r == EXECUTES)

    def matches(self, case_id: str, level: str | None) -> bool:
        if not fnmatch.fnmatchcase(case_id, self.pattern):
            return False
        return self.level is None or fnmatch.fnmatchcase(str(level or ""), self.level)


@dataclass
class Baseline:
    entries: list[Entry]
    path: str = ""

    def match(self, case_id: str, level: str | None) -> Entry | None:
        return next((e for e in self.entries if e.matches(case_id, level)), None)


def with_stated(user: Baseline | None, ops: Iterable[str], levels: Iterable[str]) -> Baseline | None:
    """The user's baseline plus the expected failures these ops state for these levels (Op.known,
    parity/ops/base.py), as entries; the user's come first, so their reasons win. None when neither
    has any: a run the ops' statements do not touch is reported exactly as without them."""
    levels = set(levels)
    entries = []
    for name in sorted(set(ops)):
        try:
            op = profiles.lookup_op(name)
        except KeyError:                        # a chain, or an op this parity no longer has
            continue
        entries += [Entry(f"{op.name}/{k.cases}", k.level, k.reason, stated=True) for k in op.known
                    if any(fnmatch.fnmatchcase(lv, k.level) for lv in levels)]
    if not entries:
        return user
    return Baseline([*(user.entries if user else []), *entries], user.path if user else "")


def with_stated_for(user: Baseline | None, res: Results) -> Baseline | None:
    """with_stated for the ops and levels of a results table."""
    t = res.table
    return with_stated(user, t["op"].astype(str) if len(t) else (), t["level"].astype(str) if len(t) else ())


def load_optional(path: str | Path | None, strict: bool = False) -> Baseline | None:
    """The baseline of a command's --baseline (None without one); ValueError for a bad file, or for
    --strict alone."""
    if path is None:
        if strict:
            raise ValueError("--strict needs --baseline FILE")
        return None
    return load(path)


def load(path: str | Path) -> Baseline:
    """Read a .toml or .json baseline; ValueError with a readable message when malformed."""
    return parse(read(path), path)


def read(path: str | Path) -> str:
    """A baseline file's text; ValueError (one line) when it cannot be read as one."""
    try:
        return files.read_text(path, "baseline")
    except OSError as e:
        raise ValueError(f"cannot read baseline {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"baseline {path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def parse(text: str, path: str | Path) -> Baseline:
    """The baseline in `text`, read from `path` (its suffix says TOML or JSON); ValueError as `load`."""
    path = Path(path)
    try:
        doc = toml.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (toml.TOMLDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"baseline {path}: {e}") from None
    except (RecursionError, MemoryError):
        raise ValueError(f"baseline {path}: not a baseline (nested too deeply)") from None
    raw = _entries_of(doc, path)
    return Baseline([_entry(e, i, path) for i, e in enumerate(raw)], str(path))


KEYS = {"pattern", "level", "reason"}


def _entries_of(doc, path: Path) -> list:
    """The entry list of a baseline document: `known` of a table/object, or a bare JSON list."""
    if isinstance(doc, list):
        return doc
    if not isinstance(doc, dict):
        raise ValueError(f"baseline {path}: expected a table with a `known` list of entries")
    if "results" in doc and "meta" in doc:     # a run's results.json: the action's `baseline` input takes one
        raise ValueError(f"baseline {path}: a run's results, not a baseline of known failures: write one from it "
                         f"with `parity baseline update {path} -o known.toml` (to compare two runs: parity diff)")
    for k in doc:
        if k not in ("known", "schema"):
            raise ValueError(f"baseline {path}: {unknown('key', k, ['known', 'schema'])}")
    if "schema" in doc and doc["schema"] != SCHEMA:
        raise ValueError(f"baseline {path}: schema {doc['schema']!r}, expected {SCHEMA!r}")
    raw = doc.get("known", [])
    if not isinstance(raw, list):
        raise ValueError(f"baseline {path}: expected a list of entries under `known`")
    return raw


def _entry(e, i: int, path: Path) -> Entry:
    """One entry, every key checked: a str pattern, an optional str level, an optional str reason."""
    where = f"baseline {path}: entry {i + 1}"
    if not isinstance(e, dict):
        raise ValueError(f"{where} is {type(e).__name__}, not a table {{pattern, level?, reason}}")
    for k in e:
        if k not in KEYS:
            raise ValueError(f"{where}: {unknown('key', k, sorted(KEYS))}")
    if not isinstance(e.get("pattern"), str) or not e["pattern"]:
        raise ValueError(f"{where} has no `pattern`" if "pattern" not in e
                         else f"{where}: `pattern` must be a non-empty string (got {e['pattern']!r})")
    for k in ("level", "reason"):
        if k in e and not isinstance(e[k], str):
            raise ValueError(f"{where}: `{k}` must be a string (got {e[k]!r})")
    if "level" in e and not any(fnmatch.fnmatchcase(lv, e["level"]) for lv in ALL_LEVELS):   # ("": no level,
                                                                                              # not every one)
        raise ValueError(f"{where}: `level` matches no level: {unknown('level', e['level'], ALL_LEVELS)}")
    return Entry(e["pattern"], e.get("level") or None, e.get("reason", ""))


def dump(baseline: Baseline, path: str | Path, old: Baseline | None = None, old_text: str | None = None) -> bool:
    """Write as TOML when the file name ends in .toml, else as JSON; entries the ops state stay
    with the ops (Op.known), out of the file. old, old_text: the file this rewrites (a TOML baseline
    written by hand) and its entries: its comments are kept, each with the text it stands in (the
    file's head, a [[known]] table and the comment lines just above it; a dropped entry's go with it).
    Returns whether they were (False when the old file had comments laid out otherwise: every entry
    is then written anew, without them). Written beside `path` and renamed over it (files.FileRefused
    when `path` is not a regular file)."""
    path = Path(path)
    entries = [e for e in baseline.entries if not e.stated]
    if path.suffix != ".toml":
        doc = {"schema": SCHEMA, "known": [{k: v for k, v in asdict(e).items() if v is not None and k != "stated"}
                                            for e in entries]}
        files.write_text(path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n", "baseline")
        return True
    layout = _layout(old_text, old) if old_text is not None and old is not None else None
    if layout is None:
        head, tables, tail = ["# parity baseline: known failures (see parity/render/baseline.py)", ""], {}, []
    else:
        head, tables, tail = layout
    lines = list(head)
    for e in entries:
        block = tables.get(id(e))
        if block is None:
            block = ["[[known]]", f"pattern = {_toml_str(e.pattern)}"]
            block += [f"level = {_toml_str(e.level)}"] if e.level else []
            block += [f"reason = {_toml_str(e.reason)}", ""]
        _join(lines, block)
    _join(lines, tail)
    files.write_text(path, "\n".join(lines).rstrip("\n") + "\n", "baseline")
    return layout is not None or old_text is None or not _has_comments(old_text)


def _toml_str(s: str) -> str:
    """`s` as a TOML basic string: JSON's escapes are TOML's, but JSON leaves DEL raw, which TOML forbids
    (a case id ending in it made a baseline `update` wrote that nothing could read back)."""
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def _join(lines: list[str], more: list[str]) -> None:
    """lines + more, one blank line between a table and what follows (not two, not none)."""
    more = list(more)
    while more and not more[0].strip() and (not lines or not lines[-1].strip()):
        more.pop(0)
    if lines and lines[-1].strip() and more and _TABLE.fullmatch(more[0]):
        lines.append("")
    lines += more


def _has_comments(text: str) -> bool:
    """Whether TOML `text` has a comment (a # outside strings)."""
    return any("#" in re.sub(r'"(?:\\.|[^"\\])*"|\'[^\']*\'', "", ln) for ln in text.splitlines())


_TABLE = re.compile(r"\s*\[\[\s*known\s*\]\]\s*(#.*)?")


def _layout(text: str, old: Baseline) -> tuple[list[str], dict[int, list[str]], list[str]] | None:
    """(the file's head lines, the lines of each old entry's table by id(entry), the lines after the
    last table) when `text` lays `old` out as one [[known]] table per entry, in order (what `dump` and
    hand-written files do); None otherwise (an inline `known = [...]`, a table that reads back as another
    entry than the file's parse)."""
    lines = text.splitlines()
    heads = [i for i, ln in enumerate(lines) if _TABLE.fullmatch(ln)]
    if len(heads) != len(old.entries):
        return None
    starts = []                                  # a table starts at the comment lines right above it
    for h in heads:
        j = h
        while j > (starts[-1] if starts else 0) and lines[j - 1].lstrip().startswith("#") and j - 1 not in heads:
            j -= 1
        starts.append(j)
    bounds = list(zip(starts, starts[1:] + [len(lines)]))
    tables: dict[int, list[str]] = {}
    for (a, b), e in zip(bounds, old.entries):
        block = lines[a:b]
        try:
            got = _entry(toml.loads("\n".join(block))["known"][0], 0, Path("(table)"))
        except (toml.TOMLDecodeError, KeyError, IndexError, TypeError, ValueError):
            return None
        if (got.pattern, got.level, got.reason) != (e.pattern, e.level, e.reason):
            return None
        tables[id(e)] = block
    last = tables[id(old.entries[-1])] if old.entries else []
    keep = len(last)                             # the last table's trailing comments: the file's end
    while keep > 1 and (not last[keep - 1].strip() or last[keep - 1].lstrip().startswith("#")) and \
            not _value_line(last, keep - 1):
        keep -= 1
    tail = last[keep:] if old.entries else []
    if old.entries:
        tables[id(old.entries[-1])] = last[:keep] + [""]
    return lines[:starts[0]] if starts else lines, tables, tail


def _value_line(block: list[str], i: int) -> bool:
    """Whether line i of a table is part of a multi-line value (a comment-looking line inside one)."""
    return '"""' in "\n".join(block[:i]) and "\n".join(block[:i]).count('"""') % 2 == 1


def apply(res: Results, baseline: Baseline | None, strict: bool = False) -> Results:
    """A copy of `res` with known failures as xfail and baselined passes as xpass (xpass-strict);
    `res` itself without a baseline.

    Idempotent: re-applying starts from `raw_verdict` when the table already has it.
    """
    if baseline is None:
        return res
    t = res.table.copy()
    raw = t["raw_verdict"] if "raw_verdict" in t.columns else t["verdict"]
    raw = raw.where(raw.notna(), t["verdict"])
    verdicts, reasons, matched = [], [], set()
    for case_id, level, v in zip(t["case_id"], t["level"], raw):
        e = baseline.match(str(case_id), level)
        if e is None:
            verdicts.append(v)
            reasons.append(None)
            continue
        matched.add(e)
        if v in FAILING:
            verdicts.append(Verdict.XFAIL)
        elif v == Verdict.PASS:                 # a reference level's pass is evidence only for an entry naming it
            stale = role(str(level)) != REFERENCE or e.level is not None     # (not that a kernel's failure is gone)
            verdicts.append(Verdict.XPASS_STRICT if strict and stale else Verdict.XPASS)
        elif v == Verdict.COMPILED and strict and e.compile_only():   # the missing kernel or compile error an
            verdicts.append(Verdict.XPASS_STRICT)   # amd-static entry accepts is gone (kept `compiled` unless strict)
        else:                                   # unavailable and friends: not evidence either way
            verdicts.append(v)
        reasons.append(e.reason)
    t["raw_verdict"] = list(raw)
    t["verdict"] = verdicts
    t["baseline_reason"] = reasons
    meta = dict(res.meta)
    own = [e for e in baseline.entries if not e.stated]
    meta["baseline"] = {"path": baseline.path, "entries": len(own), "strict": strict,
                        Verdict.XFAIL: int((t["verdict"] == Verdict.XFAIL).sum()),
                        Verdict.XPASS: int(t["verdict"].isin([Verdict.XPASS, Verdict.XPASS_STRICT]).sum()),
                        "unused": [e.pattern + (f" @{e.level}" if e.level else "")
                                   for e in own if e not in matched]}
    if len(own) < len(baseline.entries):
        meta["baseline"]["stated_by_ops"] = sorted({e.reason.split(":")[0] for e in baseline.entries
                                                    if e.stated and e in matched})
    return Results(t, meta)


def from_results(res: Results, reason: str = PLACEHOLDER) -> Baseline:
    """One exact entry per currently failing (or already known-failing) case and level."""
    t = res.table
    raw = t["raw_verdict"] if "raw_verdict" in t.columns else t["verdict"]
    raw = raw.where(raw.notna(), t["verdict"])
    entries, seen = [], set()
    for case_id, level, v, r in zip(t["case_id"], t["level"], raw, t["message"]):
        if v not in FAILING or v == Verdict.XPASS_STRICT or (case_id, level) in seen:
            continue
        seen.add((case_id, level))
        first = str(r or "").splitlines()[0][:160] if r else ""
        entries.append(Entry(_escape(str(case_id)), level, f"{reason} [{v}: {first}]" if first else f"{reason} [{v}]"))
    return Baseline(entries)


def _escape(case_id: str) -> str:
    """A case ID as an fnmatch pattern matching exactly itself."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in case_id)


@dataclass
class Update:
    """What `update` did: the new baseline and where each old entry went."""
    baseline: Baseline
    kept: int = 0             # old entries still failing (their reason kept)
    dropped: int = 0          # old entries whose cases these results ran, none failing
    not_covered: int = 0      # old entries these results cannot judge: kept as they were
    added: int = 0            # new failures, with the placeholder reason
    partly: list[str] = field(default_factory=list)   # kept: passing where run, but levels not run (one line each)


def update(old: Baseline, res: Results) -> Update:
    """`old` brought up to date with `res`: an old entry stays while a case it matches fails (its
    hand-written reason kept), goes when the results ran its cases, none failing, on every level its
    level glob can match (the known levels, levels.ALL_LEVELS, and the results' own), and stays
    untouched otherwise: a cpu run says nothing about `level = "c*"` on cuda or cupy, nor about an
    entry without a level (every level). Such an entry, passing where it ran, is said in `partly`. Each
    failure no entry covers gets a new exact entry, unless its op states it (Op.known): that one stays
    with the op."""
    fresh = from_results(res)
    failing = {e for e in fresh.entries}
    keys = list(zip(res.table["case_id"].astype(str), res.table["level"], res.table["verdict"]))
    evidence = list(dict.fromkeys((c, lv) for c, lv, v in keys if v != Verdict.UNAVAILABLE))
    ran = {str(lv) for _, lv in evidence if lv is not None}
    out = Update(Baseline([]))
    kept_old, covering = [], set()
    for e in old.entries:
        hits = [f for f in failing if e.matches(_unescape(f.pattern), f.level)]
        if hits:
            covering.update(hits)
            kept_old.append(e)
            out.kept += 1
            continue
        on, missing = _coverage(e, evidence, ran)
        if on and not missing:
            out.dropped += 1
            continue
        kept_old.append(e)
        out.not_covered += 1
        if on:
            out.partly.append(f"kept {e.pattern} @{e.level or '*'}: passing on {', '.join(on)}, but its level "
                              f"{e.level or '(any)'} also matches {', '.join(missing)}, which these results did not run")
    stated = with_stated_for(None, res)
    new = [f for f in fresh.entries if f not in covering
           and not (stated and stated.match(_unescape(f.pattern), f.level))]
    out.added = len(new)
    out.baseline = Baseline(kept_old + new)
    return out


def _coverage(e: Entry, evidence: list[tuple[str, str]], ran: set[str]) -> tuple[list[str], list[str]]:
    """(the levels `e` can match on which the results ran a case of it, the levels it can match on
    which they ran none): its passes there are evidence, and only there. The levels a glob can match
    are parity's (levels.ALL_LEVELS) and the results' own; none matched at all is nothing judged."""
    glob = e.level or "*"
    levels = [lv for lv in dict.fromkeys([*ALL_LEVELS, *sorted(ran)]) if fnmatch.fnmatchcase(lv, glob)]
    if not any(lv in ran for lv in levels):
        return [], levels                    # quick: none of its levels ran (a cpu run, a GPU entry)
    judged = {lv for c, lv in evidence if lv in levels and fnmatch.fnmatchcase(c, e.pattern)}
    return [lv for lv in levels if lv in judged], [lv for lv in levels if lv not in judged]


def _unescape(pattern: str) -> str:
    """The case ID `_escape` made an exact pattern of."""
    return pattern.replace("[*]", "*").replace("[?]", "?").replace("[[]", "[")
