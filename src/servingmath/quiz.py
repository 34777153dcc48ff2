"""Multiple-choice questions, written once and shown two ways.

A ``Question`` holds its prompt, its options, the index of the right one and a line
of feedback for every option. The same data drives the clickable quiz of a live
notebook (``Quiz``) and the website's version, where
``markdown`` puts each answer in a dropdown that opens on a click. Figures quoted in
the feedback are computed by the package, never typed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import html

import ipywidgets as widgets
from IPython.display import display

from . import _check, units
from . import load as _load
from .hardware import CATALOG, H100_SXM
from .models import LLAMA_3_8B
from .passes import forward_pass, weight_bytes
from .workload import SHAREGPT
from .roofline import ridge_point
from .serving import batching, decode_ceiling, decode_step, request

LETTERS = "ABCDEFGH"
RIGHT, WRONG = "Right.", "Not quite."


@dataclass(frozen=True)
class Feedback:
    """What a reader is told after choosing an option."""

    correct: bool
    message: str


@dataclass(frozen=True)
class Question:
    """A prompt, its options, which option is right, and why each option is or isn't."""

    prompt: str
    options: tuple[str, ...]
    correct: int
    feedback: tuple[str, ...]

    def __post_init__(self):
        _check.instance("prompt", self.prompt, str)
        object.__setattr__(self, "options", tuple(self.options))
        object.__setattr__(self, "feedback", tuple(self.feedback))
        if not 2 <= len(self.options) <= len(LETTERS):
            raise ValueError(f"options must hold 2 to {len(LETTERS)} choices, got {self.options!r}")
        if len(self.feedback) != len(self.options):
            raise ValueError(f"feedback must hold one line per option ({len(self.options)}), got {self.feedback!r}")
        for name, texts in (("options", self.options), ("feedback", self.feedback)):
            for text in texts:
                if not isinstance(text, str) or not text.strip():
                    raise ValueError(f"{name} must be non-empty strings, got {text!r}")
        self._index("correct", self.correct)

    def _index(self, name, value) -> int:
        index = int(_check.count(name, value))
        if index >= len(self.options):
            raise ValueError(f"{name} must be from 0 to {len(self.options) - 1}, got {value!r}")
        return index

    def answer(self, option_index) -> Feedback:
        """The feedback for choosing option ``option_index`` (counted from 0)."""
        index = self._index("option_index", option_index)
        correct = index == self.correct
        return Feedback(correct, f"{RIGHT if correct else WRONG} {self.feedback[index]}")


def _escaped(text: str) -> str:
    # A dollar sign would open inline maths on the website.
    return text.replace("$", r"\$")


def markdown(questions) -> str:
    """The questions as MyST Markdown, each answer folded in a dropdown until clicked."""
    blocks = []
    for number, question in enumerate(questions, start=1):
        _check.instance(f"questions[{number - 1}]", question, Question)
        options = "\n".join(f"- **{LETTERS[i]}.** {_escaped(text)}" for i, text in enumerate(question.options))
        right = question.correct
        why_not = "\n".join(f"- **{LETTERS[i]}.** {_escaped(question.answer(i).message)}"
                            for i in range(len(question.options)) if i != right)
        blocks.append(
            f"**{number}. {_escaped(question.prompt)}**\n\n{options}\n\n"
            f":::{{dropdown}} Answer to question {number}\n"
            f"**{LETTERS[right]}.** {_escaped(question.answer(right).message)}\n\n"
            f"The other options:\n\n{why_not}\n:::\n")
    return "\n".join(blocks)


# --- Lesson 1: the figures its feedback quotes, computed ---------------------------
def _share(fraction):
    """A fraction as a percentage to two significant figures: 41 %, 2.2 %, 0.05 %."""
    digits = max(0, 1 - math.floor(math.log10(fraction * 100)))
    return units.percent(fraction, digits)


# Question 1's requests, each inside Llama 3 8B's window of 8,192 tokens, as (prompt, reply).
QUESTION_1_REQUESTS = ((8000, 100), (2000, 300), (20, 2000), (3000, 250))


def _prefill_share(prompt_tokens, reply_tokens):
    # request() refuses a conversation past Llama 3 8B's window (ContextTooLong).
    return _share(1 - request(LLAMA_3_8B, H100_SXM, prompt_tokens, reply_tokens).decode_share)


def _decode_steps(prompt_tokens, reply_tokens):
    return units.number(request(LLAMA_3_8B, H100_SXM, prompt_tokens, reply_tokens).decode_steps)


_RIDGE = units.number(ridge_point(H100_SXM.peak_flops, H100_SXM.memory_bandwidth))
_ONE_USER_RATE = units.number(1 / decode_step(LLAMA_3_8B, H100_SXM).time)
_TWICE_THE_WEIGHTS_RATE = units.number(decode_ceiling(
    H100_SXM.memory_bandwidth, 2 * weight_bytes(LLAMA_3_8B.parameters)))
_EIGHT_USER_INTENSITY = units.number(forward_pass(LLAMA_3_8B, 1, batch=8, attention="none", kv_cache=False).intensity)
_WEIGHTS = units.gb(weight_bytes(LLAMA_3_8B.parameters))
_PRICE = units.dollars(H100_SXM.price_per_hour, 0)
_COST_ONE_USER = units.dollars(batching(LLAMA_3_8B, H100_SXM, 1).cost_per_million_tokens)
_COST_EIGHT_USERS = units.dollars(batching(LLAMA_3_8B, H100_SXM, 8).cost_per_million_tokens)

_REPORT, _QUESTION, _STORY, _LESSONS = QUESTION_1_REQUESTS
_n = units.number

LESSON_1_QUESTIONS = (
    Question(
        prompt="Which of these requests spends the biggest fraction of its time decoding? "
               "(Llama 3 8B on one H100, timed as in the lesson.)",
        options=(
            f"Summarising an {_n(_REPORT[0])}-token report in {_n(_REPORT[1])} tokens.",
            f"Answering a {_n(_QUESTION[0])}-token question in {_n(_QUESTION[1])} tokens.",
            f"Writing a {_n(_STORY[1])}-token story from a one-line, {_n(_STORY[0])}-token prompt.",
            f"The lesson's own request: a {_n(_LESSONS[0])}-token prompt and a {_n(_LESSONS[1])}-token reply.",
        ),
        correct=2,
        feedback=(
            f"Nearly all of this request's tokens go through prefill: one pass carrying {_n(_REPORT[0])} tokens, "
            f"then only {_decode_steps(*_REPORT)} decode steps. Prefill takes {_prefill_share(*_REPORT)} of its "
            "time, the largest share of the four, and decode is still most of it.",
            f"Prefill takes {_prefill_share(*_QUESTION)} of this request's time, so decode has a big share. "
            "But another option has a far shorter prompt and a far longer reply.",
            "The prompt is one short pass; the reply is "
            f"{_decode_steps(*_STORY)} decode steps, each reading every weight. "
            f"Prefill takes only {_prefill_share(*_STORY)} of the time. Reply length adds passes; "
            "prompt length only makes the first pass bigger.",
            f"Decode is most of the lesson's example too, with prefill at {_prefill_share(*_LESSONS)} of the "
            "time. Look for the shortest prompt with the longest reply.",
        ),
    ),
    Question(
        prompt="One dense model (every token uses every weight) has twice as many weights as another, stored "
               "in the same number of bits, on the same GPU. With one user, how fast does the larger one decode, "
               "compared with the smaller?",
        options=(
            "About as fast: the GPU's arithmetic units sit mostly idle in decode either way.",
            "About half as many tokens a second: every step reads twice the bytes.",
            "About a quarter as many: twice the weights, and twice the work for each.",
            "Faster: a bigger model keeps the arithmetic units busier.",
        ),
        correct=1,
        feedback=(
            "The arithmetic units are idle, and that is the clue: a decode step waits on memory, "
            "and the larger model has twice as many bytes to read.",
            "A decode step for one user is memory-bound, so it lasts weight bytes ÷ memory bandwidth. "
            f"Llama 3 8B gets {_ONE_USER_RATE} tokens a second on an H100; a model twice its size, "
            f"about {_TWICE_THE_WEIGHTS_RATE}.",
            "Each weight still does 2 operations per token, whatever the model's size. And arithmetic "
            "doesn't set decode's pace anyway: the bytes do, and they only double.",
            "The larger model has twice the arithmetic but also twice the bytes, so its operations per byte "
            f"stay where the smaller one's are, far below the H100's ridge of {_RIDGE}. Each step still waits on memory, for twice as long.",
        ),
    ),
    Question(
        prompt="Prefill takes ten prompt tokens through the model in one pass. "
               "Why can't decode take ten reply tokens through in one pass?",
        options=(
            "Each reply token is the input to the pass that chooses the next one, so the ten don't "
            "exist until they have been made one at a time.",
            "The causal mask stops reply tokens from being processed together.",
            "Decode uses different weights from prefill, too large to apply to ten tokens at once.",
            "Ten tokens would make the pass compute-bound, and so slower.",
        ),
        correct=0,
        feedback=(
            "Every prompt token is known before the model starts; the reply is a chain in which each "
            "token waits on the one before it.",
            "The causal mask works in prefill too, which still takes the whole prompt in one pass. What "
            "decode lacks is the tokens.",
            "Prefill and decode use the same weights, and batching fills a decode pass with other users' "
            "tokens. What it can't have is this reply's next ones.",
            f"Ten tokens a pass is far below the H100's ridge of {_RIDGE} operations per byte: carrying them "
            "together would cost almost nothing. The trouble is that they don't exist yet.",
        ),
    ),
    Question(
        prompt="Llama 3 8B's decode on one H100 is memory-bound. Instead of running 8 users' decode steps one "
               "after another, you put all 8 in one pass. How do the weight reads per token change?",
        options=(
            "They fall to an eighth: one read of the weights now serves 8 tokens.",
            "They stay the same: each user still needs every weight.",
            "They grow eightfold, because the pass carries eight times the tokens.",
            "They fall to an eighth, but each step takes about eight times as long, so nothing is gained.",
        ),
        correct=0,
        feedback=(
            f"The pass still reads all {_WEIGHTS} once, and now 8 tokens use it. At {_EIGHT_USER_INTENSITY} "
            f"operations per byte, far below the ridge of {_RIDGE}, the step takes about as long as before, "
            f"so a million tokens at {_PRICE} an hour cost {_COST_EIGHT_USERS} instead of {_COST_ONE_USER}.",
            "Each user needs every weight, but all 8 use the copy read once in the pass. Reads happen per "
            "pass, not per user.",
            "The arithmetic grows eightfold; the bytes of weights read do not. A pass reads each weight "
            "once, however many tokens it carries.",
            f"The reads per token do fall to an eighth, but the step doesn't slow down: at "
            f"{_EIGHT_USER_INTENSITY} operations per byte the pass still waits on memory, so it lasts about "
            "as long as a single-token pass.",
        ),
    ),
)


# --- Lesson 2: the figures its feedback quotes, computed ---------------------------
# Question 4's batches at 3,000 tokens: not Part 4's table's (1, 4, 32, 128, 512 users), nor its practice Problem
# 4.3's 96 users, whose speed the answer's feedback would print.
QUESTION_4_USERS = (40, 80)


def _lesson_2_questions():
    from dataclasses import replace

    from .cache import cached_decode, decode_with_and_without_cache
    from .memory import kv_cache_bytes, max_batch

    model, gpu = LLAMA_3_8B, H100_SXM
    saved = units.number(units.round_to(decode_with_and_without_cache(model, 3000).flops_saved, 2))
    gqa = units.kib(kv_cache_bytes(model, 1))
    mha = units.kib(kv_cache_bytes(replace(model, kv_heads=model.heads), 1))
    users_6000, users_3000 = (units.number(max_batch(model, gpu, tokens)) for tokens in (6000, 3000))
    fewer, more = (cached_decode(model, gpu, users, 3000) for users in QUESTION_4_USERS)
    cost_fewer, cost_more = (units.dollars(b.cost_per_million_tokens, 3) for b in (fewer, more))
    rate_fewer, rate_more = (units.number(b.tokens_per_second_per_user) for b in (fewer, more))
    return (
        Question(
            prompt="Why does a decode step that uses the KV cache do so much less arithmetic than one without it?",
            options=(
                "Only the newest token goes through the model; the keys and values of the earlier ones are kept.",
                "The cache keeps the earlier tokens' outputs, so the model can skip most of its layers.",
                "The cache stores its numbers in fewer bits, so each operation is cheaper.",
                "The cache keeps the weights closer to the arithmetic units.",
            ),
            correct=0,
            feedback=(
                "Without the cache the step would take the whole sequence through the weights again; with it, one "
                f"token. After 3,000 tokens that is about {saved} times less arithmetic.",
                "Every layer still runs for the new token. What is kept is each earlier token's keys and values "
                "in every layer, so that the new token can attend to them without recomputing them.",
                "The cache saves operations, not the cost of each. Storing it in fewer bits saves bytes, which is "
                "another matter (Part 3).",
                "The weights are read from the same memory either way. The cache holds keys and values, one set per "
                "token, not weights.",
            ),
        ),
        Question(
            prompt="Llama 3 8B has 32 query heads and 8 key-value heads. With a key-value head for every query "
                   "head instead, how would its cache per token change?",
            options=("Four times as large.", "The same: the cache holds one entry per token either way.",
                     "Eight times as large.", "A quarter of the size."),
            correct=0,
            feedback=(
                f"Each key-value head stores a key and a value for every token; 32 instead of 8 is four times the "
                f"bytes: {mha} a token instead of {gqa}.",
                "One entry per token, but each entry holds a key and a value for every key-value head, in every "
                "layer. The number of key-value heads sets its size.",
                "The count goes from 8 key-value heads to 32: four times, not eight.",
                "That is the other direction: grouping 4 query heads on each key-value head is what cut the cache "
                "to a quarter.",
            ),
        ),
        Question(
            prompt=f"An H100 holds {users_6000} users of Llama 3 8B whose conversations are 6,000 tokens long. "
                   "About how many fit if each holds 3,000 tokens?",
            options=("About twice as many.", "The same number: the weights take the same room.",
                     "About half as many.", "About four times as many."),
            correct=0,
            feedback=(
                f"Each user's cache is half the size, and the room left after the weights is unchanged: "
                f"{users_3000} users.",
                "The weights do take the same room, but the rest is shared out among the caches, and each is now "
                "half the size.",
                "Shorter conversations take less room each, so more of them fit, not fewer.",
                "A cache grows in proportion to its tokens, not their square: half the tokens, half the bytes.",
            ),
        ),
        Question(
            prompt=f"{model.name} on an H100, with conversations of 3,000 tokens. You double the users sharing "
                   f"each decode step from {QUESTION_4_USERS[0]} to {QUESTION_4_USERS[1]}. What happens?",
            options=(
                "The cost of a million tokens halves and each user's speed stays the same, as in lesson 1.",
                "The cost falls a little, and every user's tokens come more slowly.",
                "The step turns compute-bound.",
                "The cost of a million tokens rises.",
            ),
            correct=1,
            feedback=(
                "That holds only while the weights are most of what a step reads. Here every user adds their own "
                "cache to each step's reading.",
                f"The weights are shared by more users, but each user brings their own cache to read: the cost goes "
                f"from {cost_fewer} to {cost_more} a million, and each user's speed from {rate_fewer} to {rate_more} tokens "
                "a second.",
                "Each user brings far fewer operations per byte of cache than the ridge point: at this length no "
                "batch turns the step compute-bound.",
                "The weights are still shared among more tokens, so each token costs a little less, never more, "
                "while the step stays memory-bound.",
            ),
        ),
    )


LESSON_2_QUESTIONS = _lesson_2_questions()


class Quiz:
    """Multiple-choice questions (``servingmath.quiz.Question``) that answer every click.

    Each option has a lettered button; choosing one shows that option's feedback under
    the question and colours the button green or red. Tests call ``choose`` directly,
    or ``buttons[q][o].click()`` as a reader would.
    """

    def __init__(self, questions):
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
        display(self.widget())


def _lesson_3_questions():
    from . import load
    from .simulator import ATTAINMENT
    from .explorers import clock

    paged = load.paged_against_reserved(10)
    at = load.policies_at(10)
    stall = load.prefill_stall(4000, 512)
    share = units.percent(paged.reserved_share, 1)
    return (
        Question(
            prompt="A server reserves each user's whole window of cache when the request arrives. Why does most of "
                   "that memory hold nothing?",
            options=("Most conversations end far short of the window, and the rest of the reservation stays empty.",
                     "The cache of a token shrinks as the reply goes on.",
                     "Reserved memory cannot be read by the attention kernels.",
                     "The weights are stored inside each reservation."),
            correct=0,
            feedback=(f"With lengths drawn geometrically at ShareGPT's means (as the vLLM paper counted them, with OPT's and "
                      f"LLaMA's tokenizers) on Llama 3 8B, only about {share} of the reserved memory holds tokens; "
                      "paging hands out blocks as the conversation grows.",
                      "Every token keeps its keys and values for as long as the request runs.",
                      "It can: the waste is in room set aside for tokens that never come.",
                      "The weights are held once for every user, outside the caches."),
        ),
        Question(
            prompt="Under static batching, what does a user who arrives just after a batch starts wait for?",
            options=("The longest reply in that batch, then their own prefill.",
                     "One decode step.",
                     "Their own prefill only.",
                     "Every request that arrived before them, one at a time."),
            correct=0,
            feedback=(f"At 10 requests a second the p99 first token came after {clock(at['static'].ttft_p99)} under "
                      f"static batching, against {clock(at['continuous'].ttft_p99)} under continuous batching.",
                      "That is continuous batching: the new user joins at the next step.",
                      "The batch under way has to finish first.",
                      "The batch runs its users together; the wait is for the whole batch to finish."),
        ),
        Question(
            prompt="A 4,000-token prompt joins a running batch. What does chunked prefill change for the users "
                   "already writing their replies?",
            options=("Their longest wait for a token shrinks to about one step with a chunk in it.",
                     "Nothing: their tokens are made in separate steps.",
                     "They wait longer, since the prompt takes more steps.",
                     "Their cache is freed while the prompt is read."),
            correct=0,
            feedback=(f"Prefilled whole, the step takes {clock(stall.whole_gap)}; with a budget of "
                      f"{units.number(stall.step_tokens)} tokens a step the longest is {clock(stall.chunked_gap)}.",
                      "Under continuous batching the prompt shares their step.",
                      "It is the new user whose first token comes a little later.",
                      "Their caches stay; only preemption frees a cache."),
        ),
        Question(
            prompt="What does DistServe's goodput count?",
            options=(f"The most requests a second one GPU takes while a chosen share of requests meets both latency "
                     f"targets ({units.percent(ATTAINMENT)} here, as in DistServe's evaluation).",
                     "All the tokens a second a server makes.",
                     "The tokens a second of the fastest user.",
                     "The requests a second at which the GPU turns compute-bound."),
            correct=0,
            feedback=("A rate, found against targets for the first token and for the tokens after it.",
                      "That is throughput, which keeps rising past the point where users wait too long.",
                      "Goodput is a rate of requests served within the targets.",
                      "Goodput is set by the targets, whatever the bound of a step."),
        ),
    )


# --- Lesson 4: the figures its feedback quotes, computed ---------------------------
# A user holding this many tokens, as lesson 4's parts take it.
LESSON_4_CACHED = 1000


# The link between servers Part 4, its wrap-up and the quiz name: one 400 Gb/s RoCE port a GPU.
LESSON_4_NETWORK = "roce-400g"
# A short prompt: ShareGPT's mean, as Part 4's short requests draw them.
LESSON_4_SHORT = round(SHAREGPT.mean_prompt)


def lesson_4_split() -> dict:
    """Part 4's long prompts on four H100s at its targets: the split that serves most over NVLink (``layout``), its
    requests a second over NVLink and over ``LESSON_4_NETWORK``, and those of the four colocated at the engine's
    default budget."""
    from . import disaggregation

    colocated, *splits = disaggregation.layouts(4)
    served = {split: disaggregation.goodput(split, 0.4, 0.015, "long", "nvlink4") for split in splits}
    best = max(splits, key=lambda split: served[split])
    return {"layout": best, "colocated": disaggregation.goodput(colocated, 0.4, 0.015, "long", "nvlink4"),
            "nvlink4": served[best],
            "over_network": disaggregation.goodput(best, 0.4, 0.015, "long", LESSON_4_NETWORK)}


# Counts of GPUs as the quiz's feedback spells them.
_GPU_WORDS = {1: "one", 2: "two", 3: "three", 4: "four"}


def lesson_4_figures() -> dict:
    """The figures lesson 4's questions and its wrap-up quote: steps split over GPUs, and a prompt's cache sent."""
    from . import hardware, parallel
    from .memory import kv_cache_bytes
    from .models import MODELS

    small, card, big = MODELS["llama-3.2-1b"], CATALOG["h100-pcie"], MODELS["llama-3-70b"]
    four = parallel.group(H100_SXM, 4, "nvlink4")
    sent = {prompt: kv_cache_bytes(LLAMA_3_8B, prompt, 1, 16) for prompt in (LESSON_4_SHORT, 2000)}
    network = hardware.INTERCONNECTS[LESSON_4_NETWORK]
    return {
        "small_one": parallel.tensor_parallel_step(small, parallel.group(card, 1), cached_tokens=LESSON_4_CACHED),
        "small_two": parallel.tensor_parallel_step(small, parallel.group(card, 2, "pcie5"),
                                                   cached_tokens=LESSON_4_CACHED),
        "tensor_4": parallel.tensor_parallel_step(big, four, cached_tokens=LESSON_4_CACHED),
        "pipeline_4": parallel.pipeline_parallel_step(big, four, 4, cached_tokens=LESSON_4_CACHED),
        "sent": sent,
        "network": network,
        "over_network": {prompt: parallel.send_time(size, network)
                         for prompt, size in sent.items()},
        "prefill": {prompt: parallel.tensor_parallel_step(LLAMA_3_8B, parallel.group(H100_SXM, 1),
                                                          new_tokens=prompt) for prompt in sent},
    }


def _lesson_4_questions():
    from .explorers import clock

    f = lesson_4_figures()
    split = lesson_4_split()
    one, two = f["small_one"], f["small_two"]
    tensor, pipeline = f["tensor_4"], f["pipeline_4"]
    pcie_latency = f"{two.group.link.latency * 1e6:.0f} µs"
    short = f["prefill"][LESSON_4_SHORT].compute
    return (
        Question(
            prompt=f"In the course's model, whose PCIe all-reduce costs {pcie_latency} (measured on two T4s), Llama "
                   "3.2 1B decodes more slowly on two H100 PCIe cards joined by PCIe than on one. Why?",
            options=("Each card still reads the whole model.",
                     "Its all-reduces, each mostly a fixed latency, take longer than the half of the weights each card "
                     "no longer reads.",
                     "The cache must be copied to both cards at every step.",
                     "PCIe cards run the arithmetic at half speed."),
            correct=1,
            feedback=("Each card reads half the weights: tensor parallelism splits every matrix.",
                      f"One card takes {clock(one.time)} a token; two take {clock(two.compute.time)} for their passes "
                      f"and {units.number(two.allreduces)} all-reduces of {clock(two.allreduce_time)} each: "
                      f"{clock(two.time)}.",
                      "Each card keeps its own heads' share of the cache; only activations cross the link.",
                      "Each card keeps its own peak; the cost is the link's."),
        ),
        Question(
            prompt="Llama 3 70B runs on four H100s as four pipeline stages of 20 layers each. What happens to one "
                   "user's time between tokens, against the same model split by tensor parallelism on the same GPUs?",
            options=("It is about four times as long: the token crosses the stages one after another.",
                     "It is a quarter as long: each GPU holds a quarter of the layers.",
                     "It is the same: both split the weights four ways.",
                     "It is twice as long: half the stages wait."),
            correct=0,
            feedback=(f"Each stage's turn takes up to {clock(pipeline.stage.time)}, and a token crosses all four: "
                      f"{clock(pipeline.token_time)}, against {clock(tensor.time)} with tensor parallelism. Stages "
                      "raise throughput when several micro-batches are in flight, not one user's speed.",
                      "Each stage works on the token only after the stage before it has finished.",
                      "Both read a quarter of the weights on each GPU, but tensor parallelism reads them at once.",
                      "One user's token keeps one stage busy at a time: the other three wait."),
        ),
        Question(
            prompt="Four copies of a model serve one stream of requests, near the copies' knee. Which router most "
                   "often keeps the longest waits for a first token shortest, at the same load?",
            options=("Sending each request to the copies in turn.",
                     "Sending each request to a copy chosen at random.",
                     "One queue that every copy takes from when it has room.",
                     "It makes no difference: the copies are identical."),
            correct=2,
            feedback=("Turns ignore load: a copy busy with long replies gets its turn all the same.",
                      "Chance can pile requests on one copy while another sits idle.",
                      "In most draws of arrivals near the knee, as Part 3 finds: no request waits while any copy has "
                      "room; separate queues let one copy's line grow while another idles.",
                      "The copies are identical; the lines in front of them are not."),
        ),
        Question(
            prompt="Prefill runs on GPUs of its own and sends each prompt's cache to the decode GPUs. Against the "
                   f"same GPUs each doing both at vLLM {_load.ENGINE[1]}'s default budget a step, as Part 4 runs them, "
                   "when does the split lose?",
            options=("With long prompts whose caches cross a 400 Gb/s RoCE port between servers.",
                     "With short prompts and longer replies, or with a stage left idle: the GPUs each phase keeps to itself "
                     "cost more than the stalls they remove.",
                     "Never: separating the phases always serves more requests per GPU.",
                     "Whenever the model needs more than one GPU."),
            correct=1,
            feedback=(f"It wins there: over that port Part 4's {_GPU_WORDS[split['layout'].prefill]} prefill and "
                      f"{_GPU_WORDS[split['layout'].decode]} decode GPUs serve "
                      f"{units.number(split['over_network'], 1)} requests a second, against "
                      f"{units.number(split['colocated'], 1)} colocated. Long prompts are where the stalls they "
                      "cause are worst, and the trip costs them little.",
                      f"The trip costs little: a 2,000-token prompt of Llama 3 8B leaves {units.gb(f['sent'][2000])} "
                      f"of cache, which crosses {units.gbit_per_s(f['network'].bandwidth)} RoCE in "
                      f"{clock(f['over_network'][2000])}, against the {clock(f['prefill'][2000].time)} its prefill "
                      f"takes on an H100 at the spec sheet's peak. Separation buys decode steps that no prefill "
                      f"stalls; a short prompt barely stalls them: a ShareGPT prompt's arithmetic, about "
                      f"{units.number(LESSON_4_SHORT)} tokens, {clock(short.compute_time)} at the peak, hides under the "
                      f"{clock(short.memory_time)} its pass spends on memory, nearly all of it the "
                      "read of the weights that a decode step makes anyway, so little is gained for GPUs each phase "
                      "keeps to itself. In Part 4's profile short prompts lose by streaming alone: the four colocated "
                      "GPUs' API servers stream more tokens than the three decode GPUs' do, at a cost likely set high; "
                      "without it both stop at the pace of the one request handler the model puts before the pool. Against a budget tuned small, even long prompts need not favour the split "
                      "(Part 4).",
                      "It can lose: the GPUs are split by phase, and a phase with too few requests leaves its GPUs "
                      "idle.",
                      "Each phase may itself be split over several GPUs; that is a separate choice."),
        ),
    )


def __getattr__(name):
    # Lessons 3's and 4's questions run the simulator and the parallel steps: built on first use, not on import.
    builders = {"LESSON_3_QUESTIONS": _lesson_3_questions, "LESSON_4_QUESTIONS": _lesson_4_questions}
    if name in builders:
        value = builders[name]()
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
