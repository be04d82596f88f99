"""What the async engine does to a call's inputs before they are queued: check the call's
arguments (its input form, request ids and pretokenized entries), check each text's tasks
against the model's pooler (errors name the request, ``request 'ID': ...``), tokenize (in the
tokenizer pool), reusing the tokens chunking found where the text is sent as it is, and refuse
what came out longer than the model (or the form) takes when it may not be cut. A scoring call's
(query, text) pairs are checked and written in the model's pair form the same way."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Sequence
from typing import Any

from tokenizers import Encoding

from poolq.worker.engine.checkpoints.description import ModelDescription
from poolq.worker.engine.checkpoints.input_forms import INPUT_FORM_NAMES, FormedInput, InputForm
from poolq.worker.engine.checkpoints.pair_forms import PairForm
from poolq.worker.engine.engine_api import (
    EngineObserver,
    InputTooLongError,
    TaskSpec,
    as_params,
)
from poolq.worker.engine.execution.tokenizer import TextTokenizer
from poolq.worker.pooling import PoolingParams
from poolq.worker.pooling.params import PoolingParamsError

log = logging.getLogger("poolq.worker.engine.engine")


def checked_form(description: ModelDescription, input_form: str) -> InputForm | None:
    """The model's form named ``input_form`` (None where the model has no input forms); a name
    that is no input form is refused."""
    if input_form not in INPUT_FORM_NAMES:
        raise ValueError(f"input_form must be one of {list(INPUT_FORM_NAMES)}, got {input_form!r}")
    forms = description.input_forms
    return forms.form(input_form) if forms is not None else None


def checked_ids(
    n: int,
    request_ids: Sequence[str] | None,
    pretokenized: Sequence[Encoding | list[int] | None] | None,
) -> list[str]:
    """The call's request ids (default ``#0``, ``#1``, ...), one per text, as ``pretokenized``
    must be where given."""
    ids = list(request_ids) if request_ids is not None else [f"#{i}" for i in range(n)]
    if len(ids) != n:
        raise ValueError(f"request_ids: expected {n} entries, got {len(ids)}")
    if pretokenized is not None and len(pretokenized) != n:
        raise ValueError(f"pretokenized: expected {n} entries, got {len(pretokenized)}")
    return ids


def checked_params(
    pooler: Any,
    texts: Sequence[str],
    tasks: Sequence[TaskSpec] | Sequence[Sequence[TaskSpec]],
    ids: Sequence[str],
) -> tuple[list[tuple[PoolingParams, ...]], dict[int, Exception]]:
    """Each text's pooling params (one task list for all texts, or one per text), and the
    errors of the texts that cannot be encoded, by index. A shared task list is validated
    once."""
    n = len(texts)
    per_text = bool(tasks) and not isinstance(tasks[0], str | PoolingParams)
    if per_text and len(tasks) != n:
        raise ValueError(f"tasks: expected one task list per text ({n}), got {len(tasks)}")
    shared = None if per_text else as_params(tasks)  # type: ignore[arg-type]
    errors: dict[int, Exception] = {}
    params: list[tuple[PoolingParams, ...]] = []
    shared_ok = False  # the same tasks for every text: checked once (else per text, below)
    if shared is not None:
        with contextlib.suppress(ValueError):
            pooler.validate(shared, [ids[0]] * len(shared))
            shared_ok = True
    for i in range(n):
        try:
            ps = shared if shared is not None else as_params(tasks[i])  # type: ignore[arg-type]
            params.append(ps)
            if not shared_ok:
                pooler.validate(ps, [ids[i]] * len(ps))
            if not isinstance(texts[i], str):
                raise PoolingParamsError(
                    f"request {ids[i]!r}: text must be a string, got {type(texts[i]).__name__}"
                )
        except ValueError as exc:
            errors[i] = (
                exc
                if str(exc).startswith("request ")
                else PoolingParamsError(f"request {ids[i]!r}: {exc}")
            )
    return params, errors


def checked_pairs(pairs: Sequence[Any], ids: Sequence[str]) -> dict[int, Exception]:
    """The errors of the entries that are no (query, text) pair of strings, by index."""
    errors: dict[int, Exception] = {}
    for i, pair in enumerate(pairs):
        if (
            not isinstance(pair, tuple | list)
            or len(pair) != 2
            or not all(isinstance(t, str) for t in pair)
        ):
            errors[i] = PoolingParamsError(
                f"request {ids[i]!r}: expected a (query, text) pair of strings, got {pair!r:.80}"
            )
    return errors


def tokenize_pairs(
    form: PairForm,
    tokenizer: TextTokenizer,
    pairs: list[tuple[str, str]],
    observer: EngineObserver | None,
) -> list[FormedInput]:
    """(Tokenizer pool) ``pairs`` in the model's pair form (``pair_forms.py``)."""
    t0 = time.perf_counter()
    out = form.form(tokenizer, [(q, t) for q, t in pairs])
    _tokenized(observer, t0)
    return out


def _tokenized(observer: EngineObserver | None, t0: float) -> None:
    if observer is not None:
        try:
            observer.tokenized(time.perf_counter() - t0)
        except Exception:  # metrics must never fail an encode
            log.exception("engine observer failed")


def tokenize(
    tokenizer: TextTokenizer,
    texts: list[str],
    form: InputForm | None,
    pretokenized: list[Encoding | list[int] | None] | None,
    observer: EngineObserver | None,
) -> list[FormedInput]:
    """Tokenize ``texts``, then write each in its input form. ``pretokenized`` (no form): the
    texts' tokens already split, used where given (only the special tokens are added)."""
    t0 = time.perf_counter()
    if form is None:
        todo = [i for i, e in enumerate(pretokenized or ()) if e is None]
        if pretokenized is None or len(todo) == len(texts):
            done = tokenizer.encode_batch(texts)
        else:
            done = tokenizer.post_process([e for e in pretokenized if e is not None])
            fresh = iter(tokenizer.encode_batch([texts[i] for i in todo]) if todo else ())
            reused = iter(done)
            done = [next(fresh) if e is None else next(reused) for e in pretokenized]
        out = [FormedInput(t.ids, t.truncated) for t in done]
    else:
        tokenized = tokenizer.encode_batch([form.text(t) for t in texts])
        out = [form.apply(t) for t in tokenized]
    _tokenized(observer, t0)
    return out


def fitting(
    ok: Sequence[int],
    tokenized: Sequence[FormedInput],
    ids: Sequence[str],
    errors: dict[int, Exception],
    truncate: bool,
    input_form: str,
    form: InputForm | None,
    max_length: int,
) -> list[int]:
    """The texts of ``ok`` (their ``tokenized`` forms, in order) that may be queued: those not
    cut, or all where ``truncate``. Each of the others gets its error in ``errors``: longer than
    ``max_length`` (the form's where ``form``, else the model's)."""
    accepted: list[int] = []
    for i, tok in zip(ok, tokenized, strict=True):
        if tok.truncated and not truncate:
            where = f"the {input_form} form's" if form is not None else "the model's"
            what = "pair" if input_form == "pair" else "input"
            errors[i] = InputTooLongError(
                f"request {ids[i]!r}: {what} is longer than {where} max length "
                f"{max_length} tokens and truncate=False"
            )
        else:
            accepted.append(i)
    return accepted
