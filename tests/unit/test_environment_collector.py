"""The environment collector: distributions (fast path vs importlib), OS, container hints."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from expdna.api import collect
from expdna.collectors.container import container_kind
from expdna.collectors.context import CollectContext
from expdna.collectors.distributions import clear_cache, installed, listing, normalize
from expdna.collectors.environment import (
    collect_environment,
    distributions_listing,
    os_release,
)
from expdna.digest import ref_of
from expdna.manifest.dna import compute_dna


def importlib_answer(paths: list[str] | None = None) -> dict[str, str]:
    """What importlib.metadata says: every distribution, the first of each name winning."""
    found: dict[str, str] = {}
    dists = (
        importlib.metadata.distributions()
        if paths is None
        else importlib.metadata.distributions(path=paths)
    )
    for dist in dists:
        try:
            name = dist.metadata["Name"]
        except Exception:  # the importlib_metadata backport raises where the stdlib says None
            continue
        if name:
            found.setdefault(normalize(name), dist.version)
    return found


def dist_info(
    site: Path,
    dirname: str,
    name: str,
    version: str,
    *,
    metadata: bool = True,
    filename: str = "METADATA",
) -> Path:
    path = site / dirname
    path.mkdir(parents=True)
    if metadata:
        (path / filename).write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nA long description.\n"
        )
    return path


# --- distributions ---------------------------------------------------------------------


def test_fast_path_equals_importlib_metadata_on_this_venv() -> None:
    fast = installed()
    assert fast == importlib_answer()
    # first on sys.path wins, as importlib.metadata.version() resolves a name
    for name, version in fast.items():
        assert importlib.metadata.version(name) == version, name
    assert {"torch", "ray", "pydantic", "expdna"} <= set(fast)


def test_the_fast_path_reads_no_dist_info_metadata(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    read: list[str] = []
    original = importlib.metadata.PathDistribution.read_text

    def spy(self: importlib.metadata.PathDistribution, filename: str) -> str | None:
        read.append(f"{self._path}/{filename}")
        return original(self, filename)

    monkeypatch.setattr(importlib.metadata.PathDistribution, "read_text", spy)
    site = [p for p in sys.path if p.endswith("site-packages")]
    clear_cache()
    assert len(installed(site)) > 20
    assert not [r for r in read if ".dist-info/" in r]
    # the spy does see the reads of the slow path
    dist_info(tmp_path, "devpkg.egg-info", "devpkg", "1.0", filename="PKG-INFO")
    assert installed([str(tmp_path)]) == {"devpkg": "1.0"}
    assert any(r.endswith("devpkg.egg-info/PKG-INFO") for r in read)


def test_odd_layouts_fall_back_to_metadata_and_agree_with_importlib(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    dist_info(first, "Zope.Interface-6.0.dist-info", "zope.interface", "6.0")
    dist_info(first, "shared_pkg-1.0.dist-info", "Shared_Pkg", "1.0")
    # a version that is not in its canonical form cannot be split from the name safely
    dist_info(first, "weird-1.0-beta.dist-info", "weird", "1.0-beta")
    # a develop install: no version in the name, PKG-INFO inside
    dist_info(first, "devpkg.egg-info", "DevPkg", "0.3.dev0", filename="PKG-INFO")
    # an old distutils install: the egg-info is a file
    (first / "filepkg-2.1-py3.11.egg-info").write_text(
        "Metadata-Version: 1.1\nName: filepkg\nVersion: 2.1\n"
    )
    # a half-removed install names nothing
    dist_info(first, "ghost-9.9.dist-info", "ghost", "9.9", metadata=False)
    dist_info(second, "shared_pkg-2.0.dist-info", "shared-pkg", "2.0")
    dist_info(second, "only_second-0.1.dist-info", "only-second", "0.1")
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zipped-4.2.dist-info/METADATA", "Name: zipped\nVersion: 4.2\n")

    paths = [str(first), str(tmp_path / "missing"), str(second), str(archive)]
    found = installed(paths)
    assert found == importlib_answer(paths)
    assert found == {
        "zope-interface": "6.0",
        "shared-pkg": "1.0",
        "weird": "1.0-beta",
        "devpkg": "0.3.dev0",
        "filepkg": "2.1",
        "only-second": "0.1",
        "zipped": "4.2",
    }


def test_the_answer_follows_an_install_in_a_path_entry(tmp_path: Path) -> None:
    site = tmp_path / "site"
    dist_info(site, "alpha-1.0.dist-info", "alpha", "1.0")
    assert installed([str(site)]) == {"alpha": "1.0"}
    dist_info(site, "beta-2.0.dist-info", "beta", "2.0")
    os.utime(site, ns=(0, 10**18))  # make sure the mtime moved, whatever the clock grain
    assert installed([str(site)]) == {"alpha": "1.0", "beta": "2.0"}


def test_listing_is_sorted_normalised_name_version_lines() -> None:
    data = listing({"zeta": "1", "alpha-beta": "2.0", "mid": "0.1+cpu"})
    assert data == b"alpha-beta==2.0\nmid==0.1+cpu\nzeta==1\n"
    assert normalize("Foo.Bar__baz-Qux") == "foo-bar-baz-qux"


# --- the section -------------------------------------------------------------------------


def test_section_digest_count_and_key_packages() -> None:
    section = collect_environment(CollectContext(environ={}))
    dists = installed()
    blob = distributions_listing()
    assert section["packages_digest"] == ref_of(blob)
    assert section["package_count"] == len(dists) == blob.count(b"\n")
    lines = blob.decode().splitlines()
    names = [line.partition("==")[0] for line in lines]
    assert names == sorted(names) == sorted(dists)
    assert "pytest==" + importlib.metadata.version("pytest") in lines
    packages = section["packages"]
    assert packages["torch"] == importlib.metadata.version("torch")
    assert packages["ray"] == importlib.metadata.version("ray")
    assert packages["nvidia-ml-py"] == importlib.metadata.version("nvidia-ml-py")
    # Every package by name (DNA version 3): the listing behind the digest, as a mapping.
    assert packages == dict(sorted(dists.items()))
    assert packages["pytest"] == importlib.metadata.version("pytest")
    assert section["hash_randomization"] is bool(sys.flags.hash_randomization)
    assert section["python_version"] == platform.python_version()
    assert section["kernel"] == platform.release()


def test_os_release_fields_and_fallbacks(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "os-release").write_text(
        '# comment\nNAME="Ubuntu"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\n'
        'VERSION_ID="22.04"\nVERSION_CODENAME=jammy\nHOME_URL="https://www.ubuntu.com/"\n'
    )
    section = collect_environment(CollectContext(environ={}), root=tmp_path)
    assert (section["os"], section["os_id"], section["os_version_id"]) == (
        "Ubuntu 22.04.4 LTS",
        "ubuntu",
        "22.04",
    )
    # /usr/lib/os-release when /etc has none (os-release(5))
    (etc / "os-release").unlink()
    lib = tmp_path / "usr" / "lib"
    lib.mkdir(parents=True)
    (lib / "os-release").write_text("NAME='Rocky Linux'\nID=\"rocky\"\nVERSION_ID=9.3\n")
    assert os_release(tmp_path)["NAME"] == "Rocky Linux"
    section = collect_environment(CollectContext(environ={}), root=tmp_path)
    assert (section["os"], section["os_id"], section["os_version_id"]) == (
        "Rocky Linux",
        "rocky",
        "9.3",
    )
    (lib / "os-release").unlink()
    section = collect_environment(CollectContext(environ={}), root=tmp_path)
    assert (section["os"], section["os_id"]) == (platform.system(), None)


@pytest.mark.parametrize(
    ("env", "files", "kind"),
    [
        ({}, [], None),
        ({}, [".dockerenv"], "docker"),
        ({}, ["run/.containerenv"], "podman"),
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, [".dockerenv"], "kubernetes"),
        ({"SINGULARITY_CONTAINER": "/img.sif"}, [], "singularity"),
        ({}, [".singularity.d/"], "singularity"),
        (
            {"APPTAINER_CONTAINER": "/img.sif", "SINGULARITY_CONTAINER": "/img.sif"},
            [".singularity.d/", ".dockerenv"],
            "apptainer",
        ),
    ],
)
def test_container_hints(
    tmp_path: Path, env: dict[str, str], files: list[str], kind: str | None
) -> None:
    for name in files:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith("/"):
            path.mkdir()
        else:
            path.touch()
    assert container_kind(env, tmp_path) == kind
    section = collect_environment(CollectContext(environ=env), root=tmp_path)
    assert section["container"] == kind


def test_in_a_manifest_the_listing_stays_out_and_the_digest_enters_the_dna() -> None:
    manifest = collect(collectors=["environment"], environ={})
    assert manifest.dna is not None
    doc = manifest.to_dict()
    env = doc["environment"]
    assert env["packages_digest"] == ref_of(distributions_listing())
    assert manifest.collection.collectors["environment"].status == "ok"
    assert len(json.dumps(doc)) < 20_000
    # another package set moves the environment digest, and only that one
    other = compute_dna({**doc, "environment": {**env, "packages_digest": ref_of(b"x==1\n")}})
    moved = {k for k, v in other.sections.items() if manifest.dna.sections[k] != v}
    assert moved == {"environment"}


def test_the_importlib_metadata_backport_changes_nothing_and_costs_nothing() -> None:
    """Importing the backport (mlflow, opentelemetry do) swaps the stdlib's path finder for
    its own: the fast path still answers, with the same distributions."""
    code = (
        "import json, sys, importlib.metadata\n"
        "from expdna.collectors.distributions import installed, clear_cache\n"
        "before = installed()\n"
        "import importlib_metadata\n"
        "read = []\n"
        "original = importlib_metadata.PathDistribution.read_text\n"
        "def spy(self, filename):\n"
        "    read.append(filename)\n"
        "    return original(self, filename)\n"
        "importlib_metadata.PathDistribution.read_text = spy\n"
        "clear_cache()\n"
        "after = installed()\n"
        "print(json.dumps([before == after, len(after), len(read)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    same, count, reads = json.loads(done.stdout)
    assert same and count > 20 and reads == 0
