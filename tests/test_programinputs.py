"""The program inputs of a project (accelstack/programinputs.py): every committed file but the
data the gate plans, what the requirements pull in from elsewhere, what no review can see, and
each change named with its diff stat."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelstack.errors import SpecError
from accelstack.programinputs import (
    ProgramSet,
    Tree,
    blob_id,
    diff_stat,
    program_changes,
    program_set,
    read_acceptance,
    why,
)
from accelstack.projectfile import ProjectFile, read_project


def _tree(files: dict[str, bytes | str], prefix: str = "") -> Tree:
    data = {k: v.encode() if isinstance(v, str) else v for k, v in files.items()}
    return Tree(
        {k: "100644" for k in data}, prefix, lambda p: blob_id(data[p]), lambda p: data.get(p)
    )


PROJECT = ProjectFile(
    Path("Pulumi.yaml"),
    name="proj",
    options={"virtualenv": "venv"},
    settings={"name": "proj", "runtime": {"name": "python", "options": {"virtualenv": "venv"}}},
)
BASE = {
    "Pulumi.yaml": "name: proj\nruntime: python\n",
    "Pulumi.prod.yaml": "config: {}\n",
    "stacks/a.yaml": "name: a\n",
    "big/b.yaml": "name: b\n",
    "README.md": "# docs\n",
    ".gitignore": "venv/\n",
    "accelstack-accept.yaml": "fingerprint: x\n",
    "accelstack-ceiling.yaml": "max_hourly_usd: 1\n",
    "__main__.py": "from accelstack.components.entry import main\nmain()\n",
    "requirements.txt": "./wheels/accelstack-0.1.0-py3-none-any.whl\n",
    "wheels/accelstack-0.1.0-py3-none-any.whl": b"PK\0\0wheel",
    "policies/__main__.py": "# the pack\n",
    "stacks/helper.py": "x = 1\n",
}


def _set(files: dict[str, bytes | str], prefix: str = "") -> ProgramSet:
    return program_set(
        _tree(files, prefix), PROJECT, "stacks", ["big/b.yaml", "accelstack-ceiling.yaml"]
    )


def test_every_file_but_the_data_is_a_program_input() -> None:
    got = set(_set(BASE).entries)
    assert got == {
        "Pulumi.yaml",  # the settings besides config (a digest of them, not the file)
        "__main__.py",
        "requirements.txt",
        "wheels/accelstack-0.1.0-py3-none-any.whl",
        "policies/__main__.py",
        "stacks/helper.py",  # only the specs folder's YAML is data
    }


@pytest.mark.parametrize(
    ("edit", "program_change"),
    [
        ("config:\n  accelstack:spec: big/b.yaml\n", False),  # planned: a stack deploys it
        ("stackConfigDir: config\n", False),
        ("runtime:\n  name: python\n  options: {virtualenv: /opt/other}\n", True),
        ("main: .\n", True),
        ("plugins:\n  providers: [{name: aws, path: ./bin}]\n", True),
    ],
)
def test_the_project_files_settings_besides_config_are_a_program_input(
    tmp_path: Path, edit: str, program_change: bool
) -> None:
    """config: and stackConfigDir are planned; every other setting decides what runs."""
    base_text = "name: proj\nruntime: python\n"
    head_text = base_text + edit if "runtime" not in edit else "name: proj\n" + edit
    digests = []
    for name, text in (("base", base_text), ("head", head_text)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "Pulumi.yaml").write_text(text, encoding="utf-8")
        project = read_project(tmp_path / name)
        digests.append(program_set(_tree({"Pulumi.yaml": text}), project).digest())
    assert (digests[0] != digests[1]) is program_change


@pytest.mark.parametrize(
    ("path", "text", "says"),
    [
        ("accelstack/__init__.py", "", "shadows any installed `accelstack`"),
        ("pulumi_aws/__init__.py", "", "shadows any installed `pulumi_aws`"),
        ("yaml/__init__.py", "", "shadows any installed `yaml`"),
        ("components.py", "x = 1\n", "shadows any installed `components`"),
        ("sitecustomize.py", "", "shadows any installed `sitecustomize`"),
        ("uv.lock", "", "toolchain"),
        ("venv/lib/site.py", "", "the virtualenv the program runs in"),
    ],
)
def test_an_added_file_is_named_with_why_it_matters(path: str, text: str, says: str) -> None:
    base, head = _set(BASE), _set({**BASE, path: text})
    (change,) = program_changes((base, _tree(BASE)), (head, _tree({**BASE, path: text})), PROJECT)
    assert (change.path, change.change) == (path, "added") and says in change.why


def test_an_edit_has_its_diff_stat_and_a_deletion_is_named_deleted() -> None:
    edited = {**BASE, "__main__.py": BASE["__main__.py"] + "import os\nos.system('x')\n"}
    del edited["policies/__main__.py"]
    changes = program_changes((_set(BASE), _tree(BASE)), (_set(edited), _tree(edited)), PROJECT)
    assert [c.line() for c in changes] == [
        "__main__.py changed (+2 -0): the program `pulumi up` runs",
        "policies/__main__.py deleted (+0 -1): the policy pack "
        "(`pulumi preview --policy-pack policies`)",
    ]


def test_a_binary_change_says_its_sizes() -> None:
    assert diff_stat(b"PK\0\0a", b"PK\0\0ab") == "binary, 5 -> 6 bytes"
    assert diff_stat(b"a\nb\n", b"a\nc\nd\n") == "+2 -1"


# ---- what requirements.txt pulls in -------------------------------------------------------------

MONO = {
    "infra/Pulumi.yaml": "name: proj\n",
    "infra/requirements.txt": (
        "-r ../shared/base.txt\n--constraint=constraints.txt\n"
        "--find-links ../wheelhouse\npkg @ file:../vendor/pkg.whl  # a comment\n"
        "-e ../libs/helper\n${EXTRA_INDEX}\nhttps://example.invalid/x.whl\nrequests==2.0\n"
    ),
    "infra/constraints.txt": "requests<3\n",
    "shared/base.txt": "-r nested.txt\n",
    "shared/nested.txt": "boto3\n",
    "wheelhouse/a.whl": b"PK\0",
    "vendor/pkg.whl": b"PK\0",
    "libs/helper/setup.py": "x\n",
    "uv.lock": "# the repository's lock file\n",
    "unrelated/file.py": "x\n",
}


def test_requirements_pull_in_files_beyond_the_project_folder() -> None:
    program = _set(MONO, prefix="infra")
    assert set(program.entries) == {
        "Pulumi.yaml",
        "requirements.txt",
        "constraints.txt",
        "../shared/base.txt",  # -r, beside the file that names it
        "../shared/nested.txt",  # -r inside it, relative to it
        "../wheelhouse/a.whl",  # --find-links
        "../vendor/pkg.whl",
        "../libs/helper/setup.py",  # -e
        "../uv.lock",  # found searching up from the program folder
    }
    assert program.unseen == ("requirements.txt:6 uses ${EXTRA_INDEX}, set outside any review",)
    index = {**MONO, "infra/requirements.txt": "--extra-index-url https://pkgs.invalid/simple\n"}
    (note,) = _set(index, prefix="infra").unseen
    assert note == "requirements.txt:1 installs from 'https://pkgs.invalid/simple'"
    nested = {**MONO, "shared/nested.txt": "boto3\nevil\n"}
    (change,) = program_changes(
        (program, _tree(MONO, "infra")), (_set(nested, "infra"), _tree(nested, "infra"))
    )
    assert change.line().startswith("../shared/nested.txt changed (+1 -0)")


@pytest.mark.parametrize(
    ("line", "unseen"),
    [
        ("-r /etc/requirements.txt\n", "names '/etc/requirements.txt': outside any review"),
        ("-r ../../outside.txt\n", "outside the repository"),
        ("-c missing.txt\n", "which the repository does not hold"),
    ],
)
def test_what_no_review_can_see_is_listed(line: str, unseen: str) -> None:
    files = {"requirements.txt": line}
    (note,) = _set(files).unseen
    assert note.startswith("requirements.txt:1 ") and unseen in note


def test_a_virtualenv_outside_the_project_is_unseen() -> None:
    outside = ProjectFile(Path("Pulumi.yaml"), name="proj", options={"virtualenv": "/opt/venv"})
    (note,) = program_set(_tree({}), outside).unseen
    assert "'/opt/venv', outside the project" in note


def test_why_names_each_kind() -> None:
    assert why("requirements-dev.txt") == "what `pip install -r requirements.txt` installs"
    assert why("poetry.lock").startswith("the Python toolchain")
    assert why("notes/todo.txt").startswith("a file in the project folder")


def test_an_acceptance_file_names_a_fingerprint_or_is_refused() -> None:
    good = "fingerprint: sha256:" + "0" * 64 + "\n"
    assert read_acceptance(good.encode(), "a.yaml") == "sha256:" + "0" * 64
    assert read_acceptance(None, "a.yaml") is None
    with pytest.raises(SpecError, match="a.yaml: fingerprint: is 'x'"):
        read_acceptance(b"fingerprint: x\n", "a.yaml")
