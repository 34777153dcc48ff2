"""Interactive explorers: ipywidgets controls over the package, with no arithmetic of their own.

An ``Explorer`` ties named controls to three callables from the package:
``compute(**controls)`` returns a result, ``describe(result)`` the readouts as a dict
of label -> shown text, and ``draw(result, ax)`` the figure. Moving a control recomputes
and redraws. Tests drive an explorer headless with ``explorer.set(name=value)`` and read
``explorer.readouts`` and ``explorer.draws``.
"""
from __future__ import annotations

import html
from typing import Callable, Mapping

import ipywidgets as widgets
import matplotlib.pyplot as plt


class Explorer:
    """Controls -> readouts and a figure."""

    def __init__(self, controls: Mapping[str, widgets.ValueWidget], compute: Callable, describe: Callable,
                 draw: Callable, title: str = ""):
        self.controls = dict(controls)
        self._compute, self._describe, self._draw = compute, describe, draw
        self.title = title
        self.readout = widgets.HTML()
        self.output = widgets.Output()
        with plt.ioff():
            self.figure, self.ax = plt.subplots(figsize=(7.0, 3.6), layout="constrained")
        self.draws = 0
        self.result = None
        self.readouts: dict[str, str] = {}
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        self.update()

    def values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def set(self, **values):
        """Set several controls, then update once (as a reader moving them would, but batched)."""
        unknown = sorted(set(values) - set(self.controls))
        if unknown:
            raise ValueError(f"controls must be among {sorted(self.controls)}, got {unknown}")
        self._holding = True
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._holding = False
        self.update()
        return self

    _holding = False

    def _changed(self, _change):
        if not self._holding:
            self.update()

    def update(self):
        self.result = self._compute(**self.values())
        self.readouts = dict(self._describe(self.result))
        rows = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(label)}</th>"
                       f"<td>{html.escape(str(text))}</td></tr>" for label, text in self.readouts.items())
        self.readout.value = f"<table>{rows}</table>"
        self._draw(self.result, self.ax)
        self.figure.canvas.draw_idle()
        self.draws += 1
        self.output.clear_output(wait=True)
        with self.output:
            from IPython.display import display

            display(self.figure)

    def widget(self) -> widgets.Widget:
        header = [widgets.HTML(f"<b>{html.escape(self.title)}</b>")] if self.title else []
        return widgets.VBox([*header, widgets.VBox(list(self.controls.values())), self.readout, self.output])

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget())


# --- Lesson 1, part 1: the passes of a request ---------------------------------------


# --- Lesson 1, part 2: arithmetic intensity on the roofline ---------------------------


# --- Lesson 1, part 3: where a request's time goes ------------------------------------


# --- Lesson 1, part 4: batching and the cost of a million tokens ----------------------


# --- Lesson 1, wrap-up: the quiz --------------------------------------------------------
class Quiz:
    """Multiple-choice questions (``servingmath.quiz.Question``) that answer every click.

    Each option has a lettered button; choosing one shows that option's feedback under
    the question and colours the button green or red. Tests call ``choose`` directly,
    or ``buttons[q][o].click()`` as a reader would.
    """

    def __init__(self, questions):
        # Imported here, inside this chapter's section, so the module's shared header stays untouched.
        from .quiz import LETTERS, Question

        self.questions = tuple(questions)
        if not self.questions:
            raise ValueError(f"questions must hold at least one Question, got {questions!r}")
        for number, question in enumerate(self.questions):
            if not isinstance(question, Question):
                raise TypeError(f"questions[{number}] must be a Question, got {question!r}")
        self.choices: dict[int, int] = {}
        self.buttons = [[widgets.Button(description=LETTERS[option], layout=widgets.Layout(width="3em"))
                         for option in range(len(question.options))] for question in self.questions]
        self.feedback = [widgets.HTML() for _ in self.questions]
        for question_index, row in enumerate(self.buttons):
            for option_index, button in enumerate(row):
                button.on_click(lambda _button, q=question_index, o=option_index: self.choose(q, o))

    def choose(self, question_index, option_index):
        """Pick an option, show its feedback, and return it (a ``servingmath.quiz.Feedback``)."""
        if isinstance(question_index, bool) or not isinstance(question_index, int) \
                or not 0 <= question_index < len(self.questions):
            raise ValueError(f"question_index must be from 0 to {len(self.questions) - 1}, got {question_index!r}")
        feedback = self.questions[question_index].answer(option_index)
        self.choices[question_index] = int(option_index)
        for index, button in enumerate(self.buttons[question_index]):
            chosen = index == option_index
            button.button_style = ("success" if feedback.correct else "danger") if chosen else ""
        colour = "#2ca02c" if feedback.correct else "#d62728"
        self.feedback[question_index].value = (
            f"<p style='border-left:4px solid {colour};padding-left:0.6em'>{html.escape(feedback.message)}</p>")
        return feedback

    @property
    def score(self) -> int:
        """How many questions are answered right at the moment."""
        return sum(self.questions[q].answer(o).correct for q, o in self.choices.items())

    def widget(self) -> widgets.Widget:
        blocks = []
        for number, (question, row, feedback) in enumerate(zip(self.questions, self.buttons, self.feedback), 1):
            options = [widgets.HBox([button, widgets.HTML(html.escape(text))])
                       for button, text in zip(row, question.options)]
            blocks.append(widgets.VBox([widgets.HTML(f"<b>{number}. {html.escape(question.prompt)}</b>"),
                                        *options, feedback]))
        return widgets.VBox(blocks)

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget())



# --- Plate XXIII.1: the workshop --------------------------------------------------------


# --- Lab: measured against predicted ---------------------------------------------------
