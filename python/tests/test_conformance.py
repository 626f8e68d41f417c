"""Every conformance case through ``packc.run_case``, as ``packc test`` runs them."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import List

import pytest

import packc
from conftest import EXAMPLES, REPO, SHARED


def cases(folder: Path) -> List[Path]:
    return sorted(folder.glob("*.case.yaml")) if folder.is_dir() else []


SHARED_CASES = cases(SHARED / "conformance" / "cases")
OWN_CASES = cases(EXAMPLES / "cases") + cases(REPO / "tests" / "cases")


@pytest.mark.skipif(not SHARED_CASES, reason="../shared/conformance is not beside the repository")
@pytest.mark.parametrize("path", SHARED_CASES, ids=lambda p: p.name.removesuffix(".case.yaml"))
def test_shared_case(path: Path) -> None:
    result = packc.run_case(path)
    assert result.passed, "\n".join(result.failures)
    assert result.failures == []


@pytest.mark.parametrize("path", OWN_CASES, ids=lambda p: p.name.removesuffix(".case.yaml"))
def test_own_case_with_snapshots(path: Path) -> None:
    result = packc.run_case(path, check_snapshots=True)
    assert result.passed, "\n".join(result.failures)


def test_a_failing_case_says_why(tmp_path: Path) -> None:
    case = (EXAMPLES / "cases" / "rfc0010-ex2.case.yaml").read_text()
    broken = case.replace("state: main", "state: elsewhere").replace(
        "pack_file: ../", f"pack_file: {EXAMPLES}/"
    )
    path = tmp_path / "broken.case.yaml"
    path.write_text(broken)
    # Outside the case's folder (and maybe the current one), the pack is read only when
    # its folder is allowed.
    result = packc.run_case(path, allow_paths=[EXAMPLES])
    assert not result.passed
    assert not result
    assert any("state: expected elsewhere" in f for f in result.failures), result.failures


def test_a_pack_file_outside_the_cases_folder_is_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret" / "key.yaml"
    secret.parent.mkdir()
    secret.write_text("KEY TOPSECRET-7f3a KEY\n")
    cases = tmp_path / "repo" / "cases"
    cases.mkdir(parents=True)
    case = cases / "c.case.yaml"
    case.write_text("about: x\npack_file: ../../secret/key.yaml\nexpect: {warnings: []}\n")
    result = packc.run_case(case)
    assert not result.passed
    assert any("outside the case's folder" in f for f in result.failures), result.failures
    assert not any("TOPSECRET" in f for f in result.failures), result.failures
    # Allowed deliberately, it is read: not a pack, it fails to check.
    allowed = packc.run_case(case, allow_paths=[secret.parent])
    assert any("schema_violation" in f for f in allowed.failures), allowed.failures


def test_an_unreadable_case_raises_the_os_error_open_raises(tmp_path: Path) -> None:
    missing = tmp_path / "missing.case.yaml"
    with pytest.raises(FileNotFoundError) as info:
        packc.run_case(missing)
    assert info.value.errno == errno.ENOENT
    assert info.value.filename == str(missing)
    with pytest.raises(IsADirectoryError):
        packc.run_case(tmp_path)


def test_a_case_that_is_not_a_case_fails_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "bad.case.yaml"
    path.write_text("about: [")
    result = packc.run_case(path)
    assert not result.passed
    assert "bad.case.yaml" in result.failures[0]
