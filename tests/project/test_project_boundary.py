"""One rule for every file a project brings: a link out of the project is not followed
without asking, a link inside it is, and a file that is no link is the project's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_claude.project.boundary import OutsideProject, ProjectBoundary
from mini_claude.project.instructions import approve_imports, find_instructions
from mini_claude.project.memory import append_memory, memory_targets


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    project, home, outside = tmp_path / "work" / "project", tmp_path / "home", tmp_path / "out"
    (project / ".git").mkdir(parents=True)
    home.mkdir()
    outside.mkdir()
    return project, home, outside


def test_links_inside_the_project_are_read_and_links_out_are_not(
        layout: tuple[Path, Path, Path]) -> None:
    project, home, outside = layout
    (outside / "secret").write_text("SECRET")
    (project / "AGENTS.md").write_text("shared notes")
    (project / "CLAUDE.md").symlink_to(project / "AGENTS.md")
    (project / "docs").symlink_to(outside)
    boundary = ProjectBoundary.of(project, home)
    assert boundary.read_text(project / "CLAUDE.md") == "shared notes"
    with pytest.raises(OutsideProject, match="links outside the project"):
        boundary.read(project / "docs" / "secret")
    assert boundary.read(project / "docs" / "secret", approved=True) == b"SECRET"


def test_a_linked_instruction_file_is_held_and_a_parent_folders_file_is_read(
        layout: tuple[Path, Path, Path]) -> None:
    project, home, outside = layout
    (outside / "id_rsa").write_text("PRIVATE KEY")
    (project / "CLAUDE.md").symlink_to(outside / "id_rsa")
    (project.parent / "CLAUDE.md").write_text("the user's own notes above the repository")
    found = find_instructions(project, home, user_home=home)
    assert "PRIVATE KEY" not in found.text
    assert "the user's own notes" in found.text
    assert [(h.source, h.target, h.link) for h in found.held] == [
        (project / "CLAUDE.md", outside / "id_rsa", True)]
    approve_imports(home, project, found.held, True)  # as the REPL's question does
    assert "PRIVATE KEY" in find_instructions(project, home, user_home=home).text


def test_a_note_is_not_written_through_a_memory_file_linked_out(
        layout: tuple[Path, Path, Path]) -> None:
    project, home, outside = layout
    bashrc = outside / ".bashrc"
    bashrc.write_text("export PATH=/usr/bin\n")
    (project / "CLAUDE.md").symlink_to(bashrc)
    target = memory_targets(project, home, user_home=home)[0]
    with pytest.raises(OSError, match="links outside the project"):
        append_memory(target.path, "use tabs", target.boundary)
    assert bashrc.read_text() == "export PATH=/usr/bin\n"
