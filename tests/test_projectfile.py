"""The project read as Pulumi reads it (accelstack/projectfile.py, accelstack/stackconfig.py):
which project file wins, config keys namespaced by the project, the python runtime's options;
what Pulumi would read differently from a review is refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from accelstack.cli import main
from accelstack.errors import SpecError
from accelstack.projectfile import PROJECT_FILES, config_key, read_project
from accelstack.stackconfig import project_stacks

from .conftest import STACKS

PROJECT = "name: accelstack\nruntime: python\n"


def _project(tmp_path: Path, text: str = PROJECT, stack: dict[str, object] | None = None) -> Path:
    """stacks/trn1-finetune.yaml and stacks/llama3-70b-p5.yaml, a project file, and (when
    given) Pulumi.prod.yaml."""
    (tmp_path / "stacks").mkdir()
    for name in ("trn1-finetune", "llama3-70b-p5"):
        shutil.copy(STACKS / f"{name}.yaml", tmp_path / "stacks" / f"{name}.yaml")
    (tmp_path / "Pulumi.yaml").write_text(text, encoding="utf-8")
    if stack is not None:
        (tmp_path / "Pulumi.prod.yaml").write_text(yaml.safe_dump(stack), encoding="utf-8")
    return tmp_path


def _stacks(root: Path) -> dict[str, str]:
    return {r.stack: r.spec.relative_to(root).as_posix() for r in project_stacks(root)}


def _one_line(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1, err
    return lines[0]


def test_pulumi_reads_json_first() -> None:
    """pulumi/pulumi sdk/go/common/encoding/marshal.go `Exts`: .json, .yaml, .yml."""
    assert PROJECT_FILES == ("Pulumi.json", "Pulumi.yaml", "Pulumi.yml")


@pytest.mark.parametrize("second", ["Pulumi.json", "Pulumi.yml"])
def test_a_second_project_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], second: str
) -> None:
    """A Pulumi.json beside Pulumi.yaml is what Pulumi reads (it comes first): the gate read
    the other and planned the wrong stacks. Now neither is guessed: one line, exit 2."""
    root = _project(tmp_path)
    other = {"name": "accelstack", "runtime": "python", "stackConfigDir": "elsewhere"}
    (root / second).write_text(json.dumps(other), encoding="utf-8")
    line = _one_line(capsys, "stacks", str(root))
    assert "second project file" in line and "which Pulumi reads instead" in line
    assert "Pulumi.json" in line and "Pulumi.yaml" in line
    assert _one_line(capsys, "check", str(root)).startswith("error: ")


def test_a_project_key_without_a_namespace_is_the_projects_own(tmp_path: Path) -> None:
    """`spec:` in a project named accelstack is `accelstack:spec` for Pulumi (its project
    config is namespaced by the project name): every stack deploys that spec."""
    root = _project(
        tmp_path,
        PROJECT + "config:\n  spec: stacks/llama3-70b-p5.yaml\n",
        {"config": {"aws:region": "us-east-1"}},
    )
    assert _stacks(root)["prod"] == "stacks/llama3-70b-p5.yaml"
    assert read_project(root).defaults == {"accelstack:spec": "stacks/llama3-70b-p5.yaml"}


def test_a_stack_key_without_a_namespace_and_the_old_config_form(tmp_path: Path) -> None:
    root = _project(tmp_path, stack={"config": {"spec": "stacks/llama3-70b-p5.yaml"}})
    assert _stacks(root)["prod"] == "stacks/llama3-70b-p5.yaml"
    old_form = {"config": {"accelstack:config:spec": "stacks/llama3-70b-p5.yaml"}}
    (root / "Pulumi.prod.yaml").write_text(yaml.safe_dump(old_form), encoding="utf-8")
    assert _stacks(root)["prod"] == "stacks/llama3-70b-p5.yaml"


def test_one_setting_spelt_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = {"config": {"spec": "stacks/llama3-70b-p5.yaml", "accelstack:spec": "stacks/x.yaml"}}
    root = _project(tmp_path, stack=stack)
    line = _one_line(capsys, "stacks", str(root))
    assert "Pulumi.prod.yaml" in line and "sets accelstack:spec again" in line


def test_a_known_key_in_another_projects_namespace_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In a project named `proj`, `spec:` is `proj:spec`, which the program never reads."""
    root = _project(tmp_path, "name: proj\nruntime: python\nconfig:\n  spec: stacks/x.yaml\n")
    line = _one_line(capsys, "stacks", str(root))
    assert "config.proj:spec" in line and "did you mean 'accelstack:spec'?" in line


@pytest.mark.parametrize(
    ("runtime", "says"),
    [
        ("nodejs", "runtime: is 'nodejs'; allowed: python"),
        ({"name": "python", "options": {"toolchain": "pipenv"}}, "allowed: pip, poetry, uv"),
        ({"name": "python", "options": {"typechecker": "mpy"}}, "did you mean 'mypy'?"),
        ({"name": "python", "options": {"virtualenv": ["a"]}}, "allowed: a string"),
    ],
)
def test_the_runtime_is_read_as_the_language_host_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runtime: object, says: str
) -> None:
    text = yaml.safe_dump({"name": "accelstack", "runtime": runtime})
    root = _project(tmp_path, text)
    assert says in _one_line(capsys, "stacks", str(root))


def test_the_runtime_options_and_settings_are_kept(tmp_path: Path) -> None:
    text = (
        "name: accelstack\nruntime:\n  name: python\n  options: {toolchain: uv, virtualenv: .venv}\n"
        "config: {accelstack:allowUnpinnedAmis: true}\nstackConfigDir: config\n"
    )
    project = read_project(_project(tmp_path, text))
    assert project.options == {"toolchain": "uv", "virtualenv": ".venv"}
    assert set(project.settings) == {"name", "runtime"}  # config and stackConfigDir: planned


@pytest.mark.parametrize(
    ("key", "full"),
    [("spec", "p:spec"), ("aws:region", "aws:region"), ("aws:config:region", "aws:region")],
)
def test_config_keys_as_pulumi_names_them(key: str, full: str) -> None:
    assert config_key("p", key, "Pulumi.yaml") == full


def test_a_key_pulumi_cannot_parse_is_refused() -> None:
    with pytest.raises(SpecError, match="not a configuration key Pulumi can read"):
        config_key("p", "a:b:c", "Pulumi.yaml")


def test_a_byte_order_mark_is_read_past_as_pulumi_does(tmp_path: Path) -> None:
    """pulumi/pulumi sdk/go/common/workspace/loaders.go readFileStripUTF8BOM."""
    root = _project(tmp_path)
    (root / "Pulumi.yaml").unlink()
    (root / "Pulumi.json").write_bytes(b'\xef\xbb\xbf{"name": "accelstack", "runtime": "python"}')
    (root / "Pulumi.prod.json").write_bytes(
        b'\xef\xbb\xbf{"config": {"spec": "stacks/llama3-70b-p5.yaml"}}'
    )
    assert _stacks(root)["prod"] == "stacks/llama3-70b-p5.yaml"
