"""What each student is told: right or not, the slip an answer looks like, never the expected figure."""
from __future__ import annotations

import math

from servingmath.checks import OFF_BY_ONE, SIGN, SLIPS, _matching, _show

from .marking import Graded, columns, possible
from .rubric import Rubric


def number(value: float) -> str:
    return f"{value:g}"


def final_word(result) -> str:
    """What the feedback tells of one answer as handed in: right or not, the slip it looks like; never the
    expected value (a student's variant is their own, but its answer is for them to find)."""
    answer = result.answer
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        shown = _show(float(answer), result.units)
    elif isinstance(answer, str):
        shown = repr(answer)
    else:
        shown = None
    if result.status == "right":
        return f"✓ right: {shown}"
    if result.status == "unanswered" or answer is None:
        return "… no answer: `answer` was still None when this problem's cell ran"
    if isinstance(answer, float) and not math.isfinite(answer):
        return f"✗ not marked: the answer was {answer} (not a finite number): a division by zero, or a sum over nothing?"
    if isinstance(answer, dict) and str(answer.get("repr", "")).strip().lower() in ("nan", "inf", "-inf"):
        return (f"✗ not marked: the answer was {answer['repr']} (not a finite number): a division by zero, or a sum "
                "over nothing?")
    if shown is None:
        kind = answer.get("type", "another kind") if isinstance(answer, dict) else type(answer).__name__
        return f"✗ not marked: the answer was of type {kind}, not " + (
            "one number" if result.choices is None else "one of the words the problem takes")
    if result.status == "close":
        return f"≈ close: {shown} is near the answer but outside its tolerance: a figure rounded early?"
    if result.status == "slip":
        slip = next((slip for slip in (*SLIPS, OFF_BY_ONE, SIGN) if slip.name == result.slip), None)
        if slip is OFF_BY_ONE:
            return f"✗ {shown} is not right: it looks like a count off by one ({slip.hint})"
        if slip is SIGN:
            return f"✗ {shown} is not right: {slip.hint}"
        # The problem's own slips carry their hint too (what to look at again, never the answer).
        hint = slip.hint if slip else ((getattr(result, "slips", None) or {}).get(result.slip) or (None, ""))[1]
        return f"✗ {shown} is not right: it looks like {result.slip}" + (f" ({hint})" if hint else "")
    if isinstance(answer, str) and result.choices and not _matching(answer, result.choices,
                                                                     partial=len(result.choices) > 1):
        # A word the problem does not take at all: say so, and which it takes where they are few.
        listed = ", ".join(f'"{option}"' for option in result.choices)
        return f"✗ {shown} is not right: it is none of the words the problem takes" + (
            f" ({listed})" if len(result.choices) <= 4 else "")
    return f"✗ {shown} is not right"


def feedback_text(graded: Graded, problems, rubric: Rubric) -> str:
    keys = columns(problems, rubric)
    most = possible(problems, rubric)
    share = graded.total / most if most else 0.0
    lines = [f"{rubric.assignment}: feedback for {graded.student.name}",
             f"Score: {number(graded.total)} of {number(most)} ({share:.0%})", ""]
    for name in dict.fromkeys(name for name, _ in keys):
        handed = graded.handed_in.get(name)
        late = " (late)" if name in graded.late else ""
        lines.append(f"{name}: " + (f"graded {handed}{late}" if handed else "not handed in"))
        if name in graded.identities:
            told = graded.identities[name].split(": ", 1)[1]
            lines.append(f"  {told[:1].upper()}{told[1:]}")
        for notebook, label in keys:
            if notebook == name:
                points = graded.points[(name, label)]
                lines.append(f"  {label:>5}  {number(points)} of {number(rubric.points(name, label))}  "
                             f"{graded.feedback[(name, label)]}")
        lines.append("")
    if graded.late_notes:
        # One sentence for the notebooks late for the same reason (Canvas's mark, or how late by whose clock),
        # and the penalty told once.
        reasons: dict[str, list[str]] = {}
        for name, late in graded.late_notes.items():
            reasons.setdefault(late, []).append(name)
        sentences = []
        for late, names in reasons.items():
            named = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
            if late.startswith("Canvas marked it"):
                sentences.append(f"Late: {named} ({late.replace('marked it', 'marked them') if len(names) > 1 else late}).")
            else:
                sentences.append(f"Late: {named} {'was' if len(names) == 1 else 'were'} handed in {late}.")
        lines.append(" ".join(sentences) + " " + (
            f"The rubric takes {rubric.late_penalty:.0%} off a late notebook's points: each mark of a notebook "
            f"marked (late) above is {1 - rubric.late_penalty:.0%} of what the answer earned." if rubric.late_penalty
            else "The rubric takes nothing off for it."))
        lines.append("")
    # The lateness is told above; the notes keep the rest.
    notes = [note for note in graded.notes if not any(note == f"{name}: late ({late})"
                                                      for name, late in graded.late_notes.items())]
    if notes:
        lines += ["Notes:", *(f"- {note}" for note in notes), ""]
    return "\n".join(lines)


def summary(marks: dict[str, Graded], problems, rubric: Rubric) -> str:
    most = possible(problems, rubric)
    totals = [graded.total for graded in marks.values()]
    mean = sum(totals) / len(totals) if totals else 0.0
    notebooks = sum(len(graded.handed_in) for graded in marks.values())
    late = sum(1 for graded in marks.values() if graded.late)
    return (f"grade: {len(marks)} students, {notebooks} notebooks, mean score {mean:.2f} of {number(most)} "
            f"({(mean / most if most else 0):.0%}), {late} late")
