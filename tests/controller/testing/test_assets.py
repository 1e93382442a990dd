"""Finding the real parts (``joiner.testing.assets``): the variable first, then the
shared archive unpacked once, then (envtest) upstream's release over real HTTP from a
local server standing in for GitHub; and one clear line naming the variable when none
has them."""

from __future__ import annotations

import hashlib
import http.server
import io
import lzma
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from joiner.testing.assets import (
    ASSETS_ENV,
    ENVTEST_VERSION,
    ORACLE_ENV,
    AssetsUnavailable,
    find_envtest,
    find_oracle,
)

NEEDED = ("etcd", "kube-apiserver")


@pytest.fixture(autouse=True)
def _no_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ASSETS_ENV, raising=False)
    monkeypatch.delenv(ORACLE_ENV, raising=False)


def _executables(directory: Path, names: tuple[str, ...]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_text("#!/bin/sh\n")
        (directory / name).chmod(0o755)
    return directory


def _tarball(names: tuple[str, ...], prefix: str = "", mode: str = "w:xz") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:
        for name in names:
            content = f"#!/bin/sh\necho {name}\n".encode()
            info = tarfile.TarInfo(prefix + name)
            info.size, info.mode = len(content), 0o644
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def test_the_variable_wins_over_the_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    named = _executables(tmp_path / "named", NEEDED)
    archive = tmp_path / "envtest.tar.xz"
    archive.write_bytes(_tarball(NEEDED))
    monkeypatch.setenv(ASSETS_ENV, str(named))
    assert find_envtest(NEEDED, archive=archive, index_url=None, cache=tmp_path / "c") == named
    assert not (tmp_path / "c").exists()


def test_a_variable_without_a_binary_names_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    named = _executables(tmp_path / "named", ("etcd",))
    monkeypatch.setenv(ASSETS_ENV, str(named))
    with pytest.raises(AssetsUnavailable) as error:
        find_envtest(NEEDED, archive=tmp_path / "none", index_url=None, cache=tmp_path)
    assert str(error.value) == (
        f"envtest binaries incomplete: {ASSETS_ENV}={named} has no executable kube-apiserver "
        f"in {named}; set {ASSETS_ENV} to a directory with them"
    )


def test_nothing_found_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    archive = tmp_path / "envtest.tar.xz"
    with pytest.raises(AssetsUnavailable) as error:
        find_envtest(NEEDED, archive=archive, index_url=None, cache=tmp_path)
    assert str(error.value) == (
        f"envtest binaries not found: set {ASSETS_ENV} to a directory with etcd, "
        f"kube-apiserver ({ASSETS_ENV} is not set; {archive} does not exist)"
    )


def test_the_archive_is_unpacked_once_into_the_cache(tmp_path: Path) -> None:
    archive = tmp_path / f"envtest-v{ENVTEST_VERSION}-linux-amd64.tar.xz"
    archive.write_bytes(_tarball(NEEDED))
    cache = tmp_path / "cache"
    found = find_envtest(NEEDED, archive=archive, index_url=None, cache=cache)
    assert found == cache / "envtest" / f"envtest-v{ENVTEST_VERSION}-linux-amd64"
    assert sorted(p.name for p in found.iterdir()) == sorted(NEEDED)
    assert (found / "etcd").read_text() == "#!/bin/sh\necho etcd\n"
    (found / "etcd").write_text("#!/bin/sh\necho kept\n")
    assert find_envtest(NEEDED, archive=archive, index_url=None, cache=cache) == found
    assert (found / "etcd").read_text() == "#!/bin/sh\necho kept\n"  # not unpacked again


def test_an_archive_without_a_needed_binary_says_which(tmp_path: Path) -> None:
    archive = tmp_path / "envtest.tar.xz"
    archive.write_bytes(_tarball(NEEDED))
    with pytest.raises(AssetsUnavailable, match="has no executable kube-scheduler"):
        find_envtest((*NEEDED, "kube-scheduler"), archive=archive, index_url=None, cache=tmp_path)


class _Files(http.server.BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}

    def do_GET(self) -> None:
        body = self.files.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def release_server() -> Iterator[tuple[str, dict[str, bytes]]]:
    """A local HTTP server standing in for GitHub (unreachable here)."""
    files: dict[str, bytes] = {}
    handler = type("Handler", (_Files,), {"files": files})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", files
    server.shutdown()
    server.server_close()


def _publish(files: dict[str, bytes], url: str, tarball: bytes, digest: str) -> str:
    name = f"envtest-v{ENVTEST_VERSION}-linux-amd64.tar.gz"
    files[f"/releases/{name}"] = tarball
    index = {
        "releases": {
            f"v{ENVTEST_VERSION}": {name: {"hash": digest, "selfLink": f"{url}/releases/{name}"}}
        }
    }
    files["/envtest-releases.yaml"] = yaml.safe_dump(index).encode()
    return f"{url}/envtest-releases.yaml"


def test_upstreams_release_is_downloaded_checked_and_unpacked(
    tmp_path: Path, release_server: tuple[str, dict[str, bytes]]
) -> None:
    url, files = release_server
    tarball = _tarball((*NEEDED, "kubectl"), prefix="controller-tools/envtest/", mode="w:gz")
    index = _publish(files, url, tarball, hashlib.sha512(tarball).hexdigest())
    found = find_envtest(NEEDED, archive=tmp_path / "none", index_url=index, cache=tmp_path)
    assert sorted(p.name for p in found.iterdir()) == ["etcd", "kube-apiserver", "kubectl"]
    assert (found / "kube-apiserver").read_text() == "#!/bin/sh\necho kube-apiserver\n"


def test_a_download_with_the_wrong_checksum_is_refused(
    tmp_path: Path, release_server: tuple[str, dict[str, bytes]]
) -> None:
    url, files = release_server
    tarball = _tarball(NEEDED, prefix="controller-tools/envtest/", mode="w:gz")
    index = _publish(files, url, tarball, "0" * 128)
    with pytest.raises(AssetsUnavailable) as error:
        find_envtest(NEEDED, archive=tmp_path / "none", index_url=index, cache=tmp_path)
    message = str(error.value)
    assert "the upstream download failed" in message and "is not the index's" in message
    assert ASSETS_ENV in message and "\n" not in message
    assert not list((tmp_path / "envtest").iterdir())


def test_the_oracle_from_its_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = _executables(tmp_path, ("karpenter-oracle.test",)) / "karpenter-oracle.test"
    monkeypatch.setenv(ORACLE_ENV, str(binary))
    assert find_oracle(archive=tmp_path / "none") == binary


def test_the_oracle_unpacked_once_from_its_archive(tmp_path: Path) -> None:
    archive = tmp_path / "karpenter-oracle.test.xz"
    archive.write_bytes(lzma.compress(b"#!/bin/sh\necho oracle\n"))
    found = find_oracle(archive=archive, cache=tmp_path / "cache")
    assert found == tmp_path / "cache" / "karpenter-oracle" / "karpenter-oracle.test"
    assert found.read_text() == "#!/bin/sh\necho oracle\n"
    assert found.stat().st_mode & 0o111


def test_no_oracle_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    with pytest.raises(AssetsUnavailable) as error:
        find_oracle(archive=tmp_path / "none.xz")
    assert str(error.value) == (
        f"Karpenter oracle not found: set {ORACLE_ENV} to the unpacked karpenter-oracle.test "
        f"({ORACLE_ENV} is not set; {tmp_path / 'none.xz'} does not exist)"
    )
