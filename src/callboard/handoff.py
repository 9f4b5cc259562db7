"""A hand-off packet: an in-progress session's context given to another agent or tool.

What the packet holds, in the order a receiver reads it: the handing agent's own summary, the
next steps, the repository (root, normalised remote, branch, HEAD), its changed files, a bounded
diff, and a bounded excerpt of the session's own transcript where its CLI keeps one. Every bound
is stated, and what was cut is said (``Bounded``). It travels as a task to the receiver: a data
part holds it whole; the task's text is ``compact`` (what a live session reads first: the large
parts named, with the command that shows them); a runner's CLI takes ``full`` into its context
before its next turn. Pure: building one from a working folder is ``coord/handoff_packet.py``'s.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from callboard.fence import HANDOFF_MEDIA_TYPE
from callboard.model import Model, Part
from callboard.requests import TaskRequest

HANDOFF_METADATA = "callboard_handoff"  # a hand-off task's metadata key: {"version": 1}
MEDIA_TYPE = HANDOFF_MEDIA_TYPE  # its data part's
PACKET_VERSION = 1
SUMMARY_CHARS = 8_000
NEXT_STEPS_MAX = 20
NEXT_STEP_CHARS = 500
CHANGED_FILES_MAX = 200
DIFF_BYTES = 64 * 1024
TRANSCRIPT_BYTES = 16 * 1024


class Bounded(Model):
    """A text cut to a bound: ``text`` as kept, how large it was whole, and the bound."""

    text: str
    whole_bytes: int
    bound_bytes: int

    @property
    def truncated(self) -> bool:
        return self.whole_bytes > len(self.text.encode("utf-8"))


class Repository(Model):
    root: str
    remote: str | None = Field(default=None, description="the origin's URL, normalised (no credentials)")
    branch: str | None = None
    head: str | None = Field(default=None, description="the commit HEAD names")
    changed: list[str] = Field(default_factory=list, description="'XY path' lines of git status, at most 200")
    changed_total: int = 0


class Packet(Model):
    """A hand-off: from whom to whom, and the context it carries."""

    version: int = PACKET_VERSION
    from_agent: str
    to_agent: str
    created_at: datetime
    summary: str
    next_steps: list[str] = Field(default_factory=list)
    repository: Repository | None = None
    diff: Bounded | None = None
    transcript: Bounded | None = Field(default=None, description="the end of the session's own transcript")
    cli: str | None = Field(default=None, description="the CLI the session ran in, when known")


def bounded(text: str, bound: int, *, keep_end: bool = False) -> Bounded:
    """``text`` cut to ``bound`` bytes (of UTF-8) at a character boundary: its start, or its end
    (``keep_end``: a transcript's latest part matters most)."""
    data = text.encode("utf-8")
    if len(data) <= bound:
        return Bounded(text=text, whole_bytes=len(data), bound_bytes=bound)
    piece = data[-bound:] if keep_end else data[:bound]
    return Bounded(text=piece.decode("utf-8", "ignore"), whole_bytes=len(data), bound_bytes=bound)


def compact(packet: Packet) -> str:
    """What a receiver reads first: the summary, the next steps, where the work is, and the large
    parts named with the command that shows them."""
    lines = [f"Hand-off from {packet.from_agent} to {packet.to_agent}.", "", "Summary:", packet.summary]
    if packet.next_steps:
        lines += ["", "Next steps:", *(f"{n}. {step}" for n, step in enumerate(packet.next_steps, start=1))]
    repo = packet.repository
    if repo is not None:
        lines += ["", f"Repository: {repo.root}" + (f" ({repo.remote})" if repo.remote else "")]
        files = f"{repo.changed_total} changed file" + ("" if repo.changed_total == 1 else "s")
        lines.append(
            f"Branch {repo.branch or '(detached)'} at {repo.head[:12] if repo.head else 'no commit yet'}; {files}"
        )
    named = []
    if packet.diff is not None:
        named.append(f"a diff of {packet.diff.whole_bytes} bytes" + (" (cut)" if packet.diff.truncated else ""))
    if packet.transcript is not None:
        named.append(f"the end of the session's transcript ({len(packet.transcript.text.encode())} bytes)")
    if named:
        lines += ["", f"Also in the packet: {', '.join(named)} (`callboard handoff show` with --diff, --transcript)."]
    return "\n".join(lines)


def full(packet: Packet) -> str:
    """Everything, for a CLI's context: the compact part, then the changed files, the diff and the
    transcript excerpt, each with its bound and whether it was cut."""
    sections = [compact(packet)]
    repo = packet.repository
    if repo is not None and repo.changed:
        more = repo.changed_total - len(repo.changed)
        sections.append("Changed files:\n" + "\n".join(repo.changed) + (f"\n… and {more} more" if more > 0 else ""))
    if packet.diff is not None:
        sections.append(_section("Diff", packet.diff))
    if packet.transcript is not None:
        sections.append(_section("Transcript (its end)", packet.transcript))
    return "\n\n".join(sections)


def _section(title: str, part: Bounded) -> str:
    cut = (
        f" — cut to {part.bound_bytes} of {part.whole_bytes} bytes"
        if part.truncated
        else f" — whole, {part.whole_bytes} bytes"
    )
    return f"{title}{cut}:\n{part.text}"


def packet_in(parts: list[Part] | list[dict]) -> Packet | None:
    """The packet a hand-off message carries (its data part of ``MEDIA_TYPE``), or None."""
    for part in parts:
        fields = part if isinstance(part, dict) else part.model_dump()
        if fields.get("media_type") == MEDIA_TYPE and isinstance(fields.get("data"), dict):
            try:
                return Packet.model_validate(fields["data"])
            except ValueError:
                return None
    return None


def handoff_request(packet: Packet) -> TaskRequest:
    """The task that carries ``packet`` to its receiver: the compact text, then the packet whole."""
    return TaskRequest(
        to=packet.to_agent,
        text=compact(packet),
        parts=[Part(data=packet.model_dump(mode="json"), media_type=MEDIA_TYPE)],
        subject=f"hand-off from {packet.from_agent}",
        metadata={HANDOFF_METADATA: {"version": packet.version, "from": packet.from_agent}},
    )
