"""``python -m ntputils.book adopt DIR``: publish a sweep that ran elsewhere (the GPU machine's command).

``DIR`` holds ``<name>.tar.xz`` as :mod:`ntputils.gpu.device_run` wrote it (the sweep folder: plan and
point results). Adopting it

1. unpacks it safely (only plain files and folders under ``<name>/``) into a scratch folder;
2. plans the same sweep here (:func:`~ntputils.sweeps.spec.plan_sweep` with the returned plan's
   chapter, axes and profile) and refuses unless the code hash and the point ids are the returned ones:
   the chapter's code, the data and the pins are those the bundle was made from;
3. checks each finished point's code fingerprint: every ``ntputils`` module it ran must be byte for
   byte the file here and its data digest that of the data root here; its trace digest is then
   computed here (:func:`fingerprint_here`: the machine's Python may dump the AST otherwise);
4. puts the folder at ``sweeps/<name>/`` (an existing local one is kept as
   ``sweeps/<name>.before-adopt-<time>``) and publishes it with
   :func:`~ntputils.sweeps.table.publish`, which recomputes every point's fingerprint under the
   current code and refuses a point whose code moved, a table that would be stale at once, or one that
   would lose a committed result, and swaps the committed folder in all or nothing.

A refused adoption leaves ``results/`` untouched (the unpacked sweep stays in ``sweeps/`` to look at).
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from ntputils.book.fingerprint import trace_digest
from ntputils.book.project import Project, read_json, say, write_json_atomic
from ntputils.committed import SweepTableError, check_name
from ntputils.paths import data_digest, data_dir
from ntputils.sweeps.point_record import source_digests
from ntputils.sweeps.spec import SweepSpecError, axis_pairs, plan_sweep
from ntputils.sweeps.store import RESULT, DriverRunning, no_driver, read_plan, sweep_dir
from ntputils.sweeps.table import PublishRefused, publish


class AdoptRefused(RuntimeError):
    """The returned sweep cannot be adopted (exit code 2; ``results/`` unchanged)."""


def archives(folder: Path) -> list[Path]:
    """The sweep archives (``*.tar.xz``) in ``folder``; :class:`AdoptRefused` when there are none."""
    if not folder.is_dir():
        raise AdoptRefused(f"{folder} is not a folder (give the folder the device command's files came "
                           "back to)")
    found = sorted(folder.glob("*.tar.xz"))
    if not found:
        raise AdoptRefused(f"no <name>.tar.xz in {folder}: the device command writes one per sweep into $OUT")
    return found


def unpack(archive: Path, scratch: Path) -> str:
    """Unpack ``archive`` into ``scratch``; return the sweep's name. Refuses members outside one top folder
    ``<name>/``, links and special files (``tarfile``'s ``data`` filter checks the rest)."""
    try:
        with tarfile.open(archive, "r:xz") as tar:
            members = tar.getmembers()
            tops = {Path(m.name).parts[0] for m in members if m.name}
            if len(tops) != 1:
                raise AdoptRefused(f"{archive} holds {len(tops)} top folders; one sweep folder expected")
            (name,) = tops
            check_name(name)
            if bad := [m.name for m in members if not (m.isfile() or m.isdir())]:
                raise AdoptRefused(f"{archive} holds links or special files ({', '.join(bad[:3])}); refused")
            tar.extractall(scratch, filter="data")
    except (tarfile.TarError, OSError, EOFError) as err:
        raise AdoptRefused(f"{archive} is not a readable .tar.xz ({type(err).__name__}: {err})") from None
    return name


def check_same_code(project: Project, name: str, folder: Path) -> dict:
    """The returned plan, after checking it is what this code plans (code hash, point ids) and that every
    finished point carries its fingerprint; :class:`AdoptRefused` otherwise."""
    desc = read_plan(folder / "sweep.json")
    if not desc:
        raise AdoptRefused(f"the returned sweep {name!r} has no sweep.json")
    try:
        plan = plan_sweep(project, desc["chapter"], axis_pairs(desc["axes"]), profile=desc.get("profile"),
                          name=name)
    except SweepSpecError as err:
        raise AdoptRefused(f"the returned sweep {name!r} cannot be planned here: {err}") from None
    if plan.code_hash != desc.get("code_hash") or [p.id for p in plan.points] != desc.get("point_ids"):
        raise AdoptRefused(
            f"sweep {name!r} was made by other code than the current (code hash "
            f"{str(desc.get('code_hash'))[:12]}, here {plan.code_hash[:12]}): the chapter, its data, the "
            "pins or the Python minor version differ from those the bundle was made with; make the bundle "
            "again (make device-bundle) and run its command")
    for pid in desc["point_ids"]:
        path = folder / "points" / pid / RESULT
        res = read_json(path)
        if res.get("status") == "ok":
            res["fingerprint"] = fingerprint_here(name, pid, res.get("fingerprint") or {})
            write_json_atomic(path, res)
    return desc


def fingerprint_here(name: str, pid: str, fp: dict) -> dict:
    """A returned point's fingerprint with its trace digest computed here, after checking that every
    ``ntputils`` module it ran is byte for byte the file here (``sources``) and that it hashed the data
    digest of the data root here: the digest the machine computed may differ only because its Python's
    ``ast.dump`` differs (3.12 vs 3.11). :class:`AdoptRefused` otherwise."""
    if not (fp.get("trace") and fp.get("trace_digest") and isinstance(fp.get("sources"), dict)):
        raise AdoptRefused(f"point {pid} of {name!r} has no code fingerprint (trace and module digests); it "
                           "cannot be checked against the current code")
    here = source_digests(fp["trace"])
    if changed := [rel for rel, digest in here.items() if fp["sources"].get(rel) != digest]:
        raise AdoptRefused(f"point {pid} of {name!r} ran ntputils modules that differ from the current ones "
                           f"({', '.join(changed[:5])}); make the bundle again from this code and run it")
    if fp.get("data_digest") != data_digest():
        raise AdoptRefused(f"point {pid} of {name!r} was made from other data than the data root here "
                           f"({data_dir()}): its data digest differs; make the bundle again")
    return fp | {"trace_digest_there": fp["trace_digest"], "trace_digest": trace_digest(fp["trace"])}


def adopt(project: Project, folder: Path, force: bool = False) -> list[Path]:
    """Adopt every archive in ``folder``; return the published folders. Raises :class:`AdoptRefused`,
    :class:`~ntputils.sweeps.table.PublishRefused` or :class:`SweepTableError`."""
    out = []
    base = project.root / "sweeps"
    base.mkdir(parents=True, exist_ok=True)
    for archive in archives(folder):
        scratch = Path(tempfile.mkdtemp(prefix=".adopt-", dir=base))
        try:
            name = unpack(archive, scratch)
            check_same_code(project, name, scratch / name)
            target = sweep_dir(project, name)
            try:
                with no_driver(target):
                    if target.exists():
                        kept = target.with_name(f"{name}.before-adopt-{datetime.now(UTC):%Y%m%dT%H%M%S}")
                        target.rename(kept)
                        say(f"the local sweep folder {target} is kept as {kept}")
                    (scratch / name).rename(target)
            except DriverRunning as err:
                raise AdoptRefused(f"{err}; nothing adopted") from None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        out.append(publish(project, name, force=force))
    return out


def adopt_command(project: Project, folder: Path, force: bool = False) -> int:
    """``adopt DIR [--force]``: 0, or 2 with one ``error:`` line (``results/`` unchanged)."""
    try:
        published = adopt(project, folder, force=force)
    except (AdoptRefused, PublishRefused, SweepTableError, FileNotFoundError) as err:
        say(f"error: {err}")
        return 2
    for path in published:
        say(f"published {path / 'table.csv'} and {path / 'provenance.json'}")
    return 0
