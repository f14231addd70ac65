"""transformers' reference Marian models (tests/t2t_import/marian/), as directories an
import reads. The full-state copy's weights are committed xz-compressed (its aliases and
position tables repeat other tensors: 1.13 MB raw, 0.76 MB compressed); `reference_dir`
gives a directory with them decompressed."""

import lzma
import pathlib
import shutil

MARIAN = pathlib.Path(__file__).parent / "marian"


def reference_dir(name: str, tmp_root: pathlib.Path) -> pathlib.Path:
    """Reference model `name` as `MARIAN / name`, or, when it holds `*.xz` files, as a copy
    under `tmp_root` (its `expected/` left out) with each decompressed."""
    source = MARIAN / name
    packed = sorted(source.glob("*.xz"))
    if not packed:
        return source
    target = tmp_root / name
    if not target.exists():
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("expected", "*.xz"))
        for path in packed:
            with lzma.open(path) as f:
                (target / path.stem).write_bytes(f.read())
    return target
