"""An episode journal: each finished episode appended as it ends, so a cut-off run resumes where it stopped.

An evaluation of a few hundred long episodes is most of an hour on CPU cores; without a journal, a run
stopped near its end (a session's time limit, a killed worker) starts over. The journal is one JSONL file
in a folder outside the run's outputs (DVC removes outputs before a rerun): a header line with the run's
key, then one line per finished episode (`{"index": i, "trajectory": {...}}`), flushed and synced.
Episodes are seeded by (base seed, query, sample), so an episode run again after a resume is the episode
the first run would have produced; the resumed run only skips the ones already written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from star.agent.trajectory import Trajectory
from star.jsonl import atomic_write_text

FILE = "episodes.jsonl"


class EpisodeJournal:
    """`load()` -> the episodes a previous run of the same key finished; `append(i, t)` as each one ends."""

    def __init__(self, folder: str | Path, key: str):
        self.folder = Path(folder)
        self.path = self.folder / FILE
        self.key = key
        self._fh = None

    def load(self) -> dict[int, Trajectory]:
        """Finished episodes of a run with this key. Another key's journal is set aside (not resumed);
        a line cut off by a kill mid-write ends the usable part."""
        if not self.path.is_file():
            return {}
        done: dict[int, Trajectory] = {}
        with open(self.path, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        try:
            header = json.loads(lines[0])
        except json.JSONDecodeError:
            header = {}
        if header.get("key") != self.key:
            self.path.rename(self.path.with_suffix(".stale.jsonl"))
            return {}
        for lineno, line in enumerate(lines[1:], start=2):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                done[int(record["index"])] = Trajectory.from_dict(record["trajectory"])
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                if lineno < len(lines) - 1:  # only the last line can be half-written by a kill
                    raise ValueError(f"{self.path}:{lineno}: not an episode record; remove the journal to "
                                     "start the run over") from None
                atomic_write_text(self.path, "\n".join(lines[: lineno - 1]) + "\n")  # drop the torn line
                break
        return done

    def append(self, index: int, trajectory: Trajectory) -> None:
        if self._fh is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            fresh = not self.path.is_file()
            self._fh = open(self.path, "a", encoding="utf-8")
            if fresh:
                self._write({"key": self.key})
        self._write({"index": index, "trajectory": trajectory.to_dict()})

    def _write(self, record: dict) -> None:
        self._fh.write(json.dumps(record) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def remove(self) -> None:
        """The run finished and its outputs are written: the journal has served."""
        self.close()
        self.path.unlink(missing_ok=True)
