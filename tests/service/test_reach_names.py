"""The did-you-mean index: the names one edit from a word (and the common two-edit typos) are
found without comparing the word with every name, ranked as ``difflib.get_close_matches`` ranks."""

from __future__ import annotations

import difflib

from hypothesis import given
from hypothesis import strategies as st

from callboard.service.agent_names import NameIndex

NAME = st.text(alphabet="abcdefghij-0123", min_size=1, max_size=14)


def _one_edit(word: str, data: st.DataObject) -> str:
    at = data.draw(st.integers(0, len(word) - 1))
    letter = data.draw(st.sampled_from("abcdefghij-0123"))
    kind = data.draw(st.sampled_from(["add", "drop", "change", "swap"]))
    if kind == "add":
        return word[:at] + letter + word[at:]
    if kind == "drop" and len(word) > 1:
        return word[:at] + word[at + 1 :]
    if kind == "swap" and at + 1 < len(word):
        return word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    return word[:at] + letter + word[at + 1 :]


@given(st.lists(NAME, min_size=1, max_size=60, unique=True), st.data())
def test_every_guess_is_one_difflib_accepts_and_a_name_one_edit_away_is_found(names, data) -> None:
    index = NameIndex(names)
    meant = data.draw(st.sampled_from(names))
    typo = _one_edit(meant, data)
    guesses = index.closest(typo)
    others = [n for n in names if n != typo]
    accepted = set(difflib.get_close_matches(typo, others, n=len(others) or 1, cutoff=0.75))
    assert set(guesses) <= accepted and typo not in guesses
    scores = [difflib.SequenceMatcher(None, typo, g).ratio() for g in guesses]
    assert scores == sorted(scores, reverse=True)
    if meant != typo and meant in accepted:
        best = difflib.get_close_matches(typo, others, n=1, cutoff=0.75)
        # The best guess is difflib's best whenever difflib's best is within one edit too.
        if _within_one_edit(best[0], typo):
            assert guesses[:1] == best


def _within_one_edit(a: str, b: str) -> bool:
    if abs(len(a) - len(b)) > 1:
        return False
    deletions = {a[:i] + a[i + 1 :] for i in range(len(a))} | {a}
    theirs = {b[:i] + b[i + 1 :] for i in range(len(b))} | {b}
    return bool(deletions & theirs)


def test_names_added_and_removed_are_guessed_and_forgotten() -> None:
    index = NameIndex(["backend", "frontend", "reviewer"])
    assert index.closest("bakend") == ["backend"]
    assert index.closest("reveiwer") == ["reviewer"]  # neighbours swapped
    assert index.closest("revieweers") == ["reviewer"]  # two letters too many
    assert index.closest("backend") == []  # a name is no guess for itself
    index.add("backends")
    assert index.closest("bakends") == ["backends", "backend"]
    index.remove("backends")
    assert index.closest("bakends") == ["backend"]
    assert len(index) == 3 and "backends" not in index


def test_a_dense_run_of_names_costs_a_bounded_number_of_comparisons() -> None:
    index = NameIndex(f"agent-{i:05d}" for i in range(20_000))
    assert index.closest("agnet-01234")[:1] == ["agent-01234"]
