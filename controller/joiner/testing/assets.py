"""Where the real parts the tests run against come from: the envtest control plane
(kube-apiserver, etcd, kube-controller-manager, kube-scheduler) and upstream Karpenter's
scheduler as a command (the oracle).

Each is found the same way, the first that has it wins:

1. an environment variable naming an unpacked copy (``KUBEBUILDER_ASSETS``, the
   ecosystem's convention, and ``KARPENTER_ORACLE_BIN``);
2. the archive in the workplace's ``shared`` directory beside the checkout, unpacked once
   into a cache (``$XDG_CACHE_HOME/joiner``, else ``~/.cache/joiner``);
3. for envtest only, upstream's envtest release (controller-tools), downloaded once into
   the same cache on a machine with internet. Upstream's archive has etcd and
   kube-apiserver only, so the tests that need kube-controller-manager or kube-scheduler
   still want one of the first two.

This module is the only place in the project that knows about ``shared``: a test keeps
it so. When nothing has the part, ``AssetsUnavailable`` says so in one line that names
the variable to set.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import stat
import tarfile
import tempfile
import urllib.request
from collections.abc import Iterable
from pathlib import Path

import yaml

ASSETS_ENV = "KUBEBUILDER_ASSETS"
ORACLE_ENV = "KARPENTER_ORACLE_BIN"
ENVTEST_VERSION = "1.36.2"
CONTROL_PLANE = ("etcd", "kube-apiserver")
KUBE_CONTROLLER_MANAGER = "kube-controller-manager"
KUBE_SCHEDULER = "kube-scheduler"

# The checkout's sibling directory of workplace material (absent on a user's machine).
SHARED = Path(__file__).resolve().parents[3].parent / "shared"
ENVTEST_ARCHIVE = SHARED / "envtest" / f"envtest-v{ENVTEST_VERSION}-linux-amd64.tar.xz"
ORACLE_ARCHIVE = SHARED / "karpenter-oracle" / "karpenter-oracle.test.xz"
ENVTEST_INDEX = (
    "https://raw.githubusercontent.com/kubernetes-sigs/controller-tools/HEAD/envtest-releases.yaml"
)
DOWNLOAD_TIMEOUT = 60.0


class AssetsUnavailable(Exception):
    """A real part the tests need is nowhere to be found; the message is one line."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "joiner"


# -- envtest ---------------------------------------------------------------------------------


def find_envtest(
    needed: Iterable[str] = CONTROL_PLANE,
    *,
    archive: Path = ENVTEST_ARCHIVE,
    index_url: str | None = ENVTEST_INDEX,
    cache: Path | None = None,
) -> Path:
    """The directory holding every binary in ``needed``. ``index_url=None`` never downloads."""
    needed = tuple(needed)
    cache = cache or cache_root()
    named = os.environ.get(ASSETS_ENV)
    if named:
        return _complete(Path(named), needed, f"{ASSETS_ENV}={named}")
    if archive.is_file():
        directory = _unpack_once(archive, cache / "envtest" / archive.name.split(".tar")[0])
        return _complete(directory, needed, str(archive))
    problems = [f"{ASSETS_ENV} is not set", f"{archive} does not exist"]
    if index_url:
        try:
            directory = _download_envtest(index_url, cache / "envtest")
        except (OSError, ValueError, KeyError, yaml.YAMLError, tarfile.TarError) as error:
            problems.append(f"the upstream download failed ({_short(error)})")
        else:
            return _complete(directory, needed, "upstream's envtest release")
    raise AssetsUnavailable(
        f"envtest binaries not found: set {ASSETS_ENV} to a directory with "
        f"{', '.join(needed)} ({'; '.join(problems)})"
    )


def _complete(directory: Path, needed: tuple[str, ...], source: str) -> Path:
    missing = [name for name in needed if not os.access(directory / name, os.X_OK)]
    if missing:
        raise AssetsUnavailable(
            f"envtest binaries incomplete: {source} has no executable {', '.join(missing)} "
            f"in {directory}; set {ASSETS_ENV} to a directory with them"
        )
    return directory


def _unpack_once(archive: Path, target: Path) -> Path:
    """``archive``'s files in ``target``, unpacked by whoever came first (atomic rename)."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        with tarfile.open(archive) as tar:
            _extract_flat(tar, staging)
        os.replace(staging, target)
    except OSError:
        if not target.is_dir():  # another process may have won the rename
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _extract_flat(tar: tarfile.TarFile, directory: Path) -> None:
    """Every regular file of ``tar`` into ``directory`` by its base name (upstream's
    archive nests them under controller-tools/envtest/)."""
    for member in tar.getmembers():
        if not member.isfile():
            continue
        source = tar.extractfile(member)
        assert source is not None
        destination = directory / Path(member.name).name
        with source, open(destination, "wb") as out:
            shutil.copyfileobj(source, out)
        destination.chmod(member.mode | stat.S_IXUSR | stat.S_IRUSR)


def _download_envtest(index_url: str, cache: Path) -> Path:
    name = f"envtest-v{ENVTEST_VERSION}-linux-amd64.tar.gz"
    target = cache / name.removesuffix(".tar.gz")
    if target.is_dir():
        return target
    with urllib.request.urlopen(index_url, timeout=DOWNLOAD_TIMEOUT) as response:
        index = yaml.safe_load(response.read())
    entry = index["releases"][f"v{ENVTEST_VERSION}"][name]
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        download = Path(scratch) / name
        with urllib.request.urlopen(entry["selfLink"], timeout=DOWNLOAD_TIMEOUT) as response:
            download.write_bytes(response.read())
        digest = hashlib.sha512(download.read_bytes()).hexdigest()
        if digest != entry["hash"]:
            raise ValueError(f"{name}: sha512 {digest[:12]}... is not the index's")
        return _unpack_once(download, target)


# -- the Karpenter oracle --------------------------------------------------------------------


def find_oracle(*, archive: Path = ORACLE_ARCHIVE, cache: Path | None = None) -> Path:
    """The executable of upstream Karpenter's scheduler (``karpenter-oracle.test``)."""
    named = os.environ.get(ORACLE_ENV)
    if named:
        if not os.access(named, os.X_OK):
            raise AssetsUnavailable(f"{ORACLE_ENV}={named} is not an executable file")
        return Path(named)
    if not archive.is_file():
        raise AssetsUnavailable(
            f"Karpenter oracle not found: set {ORACLE_ENV} to the unpacked "
            f"karpenter-oracle.test ({ORACLE_ENV} is not set; {archive} does not exist)"
        )
    target = (cache or cache_root()) / "karpenter-oracle" / archive.stem
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, staging = tempfile.mkstemp(prefix=target.name + ".", dir=target.parent)
        with os.fdopen(handle, "wb") as out, lzma.open(archive) as source:
            shutil.copyfileobj(source, out)
        os.chmod(staging, 0o755)
        os.replace(staging, target)
    return target


def _short(error: BaseException) -> str:
    return (str(error) or type(error).__name__).splitlines()[0][:200]
