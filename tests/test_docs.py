"""The README documents every option the plugin registers."""

from conftest import REPO
from pytest_forall.plugin.options import OPTIONS


def test_readme_lists_every_option_with_its_ini_twin() -> None:
    readme = (REPO / "README.md").read_text()
    for option in OPTIONS:
        assert f"`--forall-{option.name.replace('_', '-')}`" in readme, option.name
        assert f"`forall_{option.name}`" in readme, option.name
