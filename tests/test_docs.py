"""Every document the README, the code and the docs point at exists in the repository."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_DOC = re.compile(r"\bdocs/[\w./-]+\.(?:md|yml|yaml)\b")


def mentions() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    files = [ROOT / "README.md", ROOT / "action.yml", ROOT / "backends" / "hip" / "README.md",
             *sorted((ROOT / "parity").rglob("*.py")), *sorted((ROOT / "docs").rglob("*.md"))]
    for f in files:
        if f.is_file() and "_bundled" not in f.parts:
            for m in _DOC.findall(f.read_text(encoding="utf-8")):
                found.setdefault(m, set()).add(str(f.relative_to(ROOT)))
    return found


def test_every_docs_path_mentioned_exists():
    found = mentions()
    assert "docs/candle-kernel-abi.md" in found                # README and the code cite it
    missing = {p: sorted(where) for p, where in found.items() if not (ROOT / p).is_file()}
    assert not missing, missing


def test_docs_folder_has_the_guides():
    for name in ("candle-kernel-abi.md", "levels.md", "adding-an-op.md", "ci.md", "examples/parity.yml"):
        assert (ROOT / "docs" / name).is_file(), name
