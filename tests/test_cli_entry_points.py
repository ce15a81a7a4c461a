"""Every command-line module answers when run as a module (`python -m piiner.<part>.cli`), as its package does."""

import glob
import os
import runpy
import sys

import pytest
from conftest import REPO_ROOT

CLI_MODULES = sorted(
    os.path.relpath(path, REPO_ROOT)[:-3].replace(os.sep, ".") for path in glob.glob(f"{REPO_ROOT}/piiner/*/cli.py")
)


@pytest.mark.parametrize("module", CLI_MODULES)
# runpy runs the module afresh although the suite imported it already, and says so: expected here.
@pytest.mark.filterwarnings("ignore:.*found in sys.modules:RuntimeWarning")
def test_cli_module_run_as_main_prints_its_usage(module, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [module, "--help"])
    with pytest.raises(SystemExit) as stopped:
        runpy.run_module(module, run_name="__main__")
    assert stopped.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_every_console_script_in_pyproject_names_a_function_that_exists():
    # A module moved (piiner.train -> piiner.training.train) leaves `piiner-train` pointing at nothing on a fresh
    # install, though every test that imports the new path passes.
    import importlib
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as f:
        scripts = tomllib.load(f)["project"]["scripts"]
    assert "piiner-train" in scripts
    for name, target in scripts.items():
        module, _, function = target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), name
