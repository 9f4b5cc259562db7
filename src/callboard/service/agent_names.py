"""Did-you-mean: the agent names close to a mistyped one, kept indexed per workspace.

``NameIndex`` finds them without comparing the typo with every name; ``AgentNames`` keeps one
workspace's index current with this service's own changes and, now and then, the store's.
"""

from __future__ import annotations

import difflib
import heapq
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable

# --- did-you-mean: the names close to a given one, found without comparing it with every name.
#
# A symmetric-delete index: each name is filed under itself and every string one deletion away
# from it; a query looks up itself and the strings one and two deletions away from it. Two names
# meet when deleting at most two letters from the query and at most one from the name gives the
# same string: every name one edit away (a letter added, dropped, changed, or two neighbours
# swapped) and the common two-edit typos (two letters added; one added and one changed). The few
# names found are then ranked by ``difflib``'s ratio, as ``difflib.get_close_matches`` ranks.
#
# A query costs the lookups of its own deletions (a few hundred for a long name), not the size
# of the index; each name costs about its length in entries (a name's two-deletion strings would
# cost the square of it, which is too much memory for tens of thousands of names).

MOST_CANDIDATES = 256  # ranked per query, at most: a dense run of names (agent-0001…) is all close


def deletions(name: str, depth: int) -> list[set[str]]:
    """``name`` (first), the strings one deletion from it, …, ``depth`` deletions from it."""
    levels = [{name}]
    for _ in range(depth):
        levels.append({word[:i] + word[i + 1 :] for word in levels[-1] for i in range(len(word))})
    return levels


def _keys(name: str) -> set[str]:
    """Where a name is filed: under itself and every string one deletion from it."""
    return set().union(*deletions(name, 1))


class NameIndex:
    """Names, and for any string the names close to it. Not thread-safe: its owner locks."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        # key -> the one name filed under it, or a list of them (most keys have one: no list)
        self._filed: dict[str, str | list[str]] = {}
        self._names: set[str] = set()
        for name in names:
            self.add(name)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._names)

    def add(self, name: str) -> None:
        if name in self._names:
            return
        self._names.add(name)
        for key in _keys(name):
            filed = self._filed.get(key)
            if filed is None:
                self._filed[key] = name
            elif isinstance(filed, str):
                self._filed[key] = [filed, name]
            else:
                filed.append(name)

    def remove(self, name: str) -> None:
        if name not in self._names:
            return
        self._names.discard(name)
        for key in _keys(name):
            filed = self._filed.get(key)
            if filed == name:
                del self._filed[key]
            elif isinstance(filed, list):
                filed.remove(name)
                if len(filed) == 1:
                    self._filed[key] = filed[0]

    def closest(self, word: str, n: int = 2, cutoff: float = 0.75) -> list[str]:
        """Up to ``n`` names near ``word`` (not ``word`` itself) whose ``difflib`` ratio to it is
        at least ``cutoff``, best first (as ``difflib.get_close_matches`` orders them)."""
        candidates: set[str] = set()
        for level in deletions(word, 2):  # the nearest first: a long run of close names stops early
            for key in level:
                filed = self._filed.get(key)
                if filed is not None:
                    candidates.update((filed,) if isinstance(filed, str) else filed)
            if len(candidates) >= MOST_CANDIDATES:
                break
        candidates.discard(word)
        matcher = difflib.SequenceMatcher()
        matcher.set_seq2(word)
        scored = []
        for name in candidates:
            matcher.set_seq1(name)
            if matcher.real_quick_ratio() >= cutoff and matcher.quick_ratio() >= cutoff:
                score = matcher.ratio()
                if score >= cutoff:
                    scored.append((score, name))
        return [name for _, name in heapq.nlargest(n, scored)]


# --- a workspace's agent names, indexed, as the directory keeps them in memory

NAMES_FRESH_SECONDS = 30.0  # agents created or deleted by another process are guessed within this


class AgentNames:
    """One workspace's agent names, indexed (see ``NameIndex``). Changes made through this
    service are queued without waiting (an event loop may make them) and applied by the next
    guess; every NAMES_FRESH_SECONDS a guess first reads the names from the store again."""

    def __init__(self) -> None:
        self._index: NameIndex | None = None
        self._read_at = 0.0
        self._lock = threading.Lock()
        self._changes: deque[tuple[bool, str]] = deque()  # (added, name)

    def noted(self, name: str, added: bool) -> None:
        self._changes.append((added, name))

    def closest(self, name: str, list_names: Callable[[], Iterable[str]]) -> list[str]:
        with self._lock:
            found = self._current(list_names).closest(name)
        time.sleep(0)  # let the GIL go: a send guessing a hundred names must not hold up an event loop
        return found

    def _current(self, list_names: Callable[[], Iterable[str]]) -> NameIndex:
        if self._index is None or time.monotonic() - self._read_at >= NAMES_FRESH_SECONDS:
            began = time.monotonic()
            stored = set(list_names())  # may raise (``from_memory``): then nothing was read
            self._read_at = began
            if self._index is None:
                self._index = NameIndex(stored)
            else:  # only the difference: other processes' creations and deletions
                for gone in self._index.names - stored:
                    self._index.remove(gone)
                for new in stored - self._index.names:
                    self._index.add(new)
        while self._changes:
            added, name = self._changes.popleft()
            (self._index.add if added else self._index.remove)(name)
        return self._index
