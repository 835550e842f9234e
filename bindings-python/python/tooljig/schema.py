"""A tool from a typed Python function: its JSON Schema, its description, and its invoker.

The input schema comes from the function's type hints through pydantic (models, ``Literal``,
``Optional``, defaults, ``Annotated[..., Field(...)]`` constraints), the descriptions from its
docstring (Google, reST or NumPy style, read by ``docstring_parser``). A parameter annotated
:class:`~tooljig.ToolContext` is injected at call time and left out of the schema.

The core validates arguments against that schema before a handler runs. Pydantic then turns
the validated JSON into the Python values the function declared (a model instance, a
``datetime``, an ``int`` from ``3.0``). A function whose parameters are all strings, booleans,
string literals, ints and floats gets the JSON as is, since pydantic would convert nothing (a
``float`` that arrives as ``3`` is made ``3.0`` as pydantic makes it); only a call with an
``int`` that arrives as ``3.0`` goes through pydantic.
"""

from __future__ import annotations

import inspect
import typing
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import docstring_parser
import pydantic
from pydantic import ConfigDict, Field, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema

from tooljig._native import ToolContext
from tooljig.errors import InvalidArguments, UnsupportedTypeError

__all__ = ["ToolDef", "from_function", "invoker_for_schema", "takes_context"]

Invoke = Callable[[dict[str, Any], ToolContext], Any]


@dataclass(frozen=True)
class ToolDef:
    """What registration needs: the spec's parts and the invoker the engine calls."""

    name: str
    description: str
    input_schema: dict[str, Any]
    invoke: Invoke
    is_async: bool
    #: Whether ``invoke`` uses its second argument; when not, it is given ``None`` and no
    #: context is made for the call.
    takes_ctx: bool = True


class _NoFieldTitles(GenerateJsonSchema):
    """Pydantic's schemas, without the ``title`` it derives from each parameter name: noise
    for a model, and tokens in every request."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def json_schema_of(tp: Any, *, mode: Literal["validation", "serialization"]) -> dict[str, Any]:
    """The JSON Schema of a type, as tooljig shows it to models."""
    schema = TypeAdapter(tp).json_schema(mode=mode, schema_generator=_NoFieldTitles)
    schema.pop("title", None)
    return schema


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` runs on the event loop: ``async def`` (or an object whose ``__call__``
    is), or an async generator (whose invoker, :func:`streamed`, is ``async def``)."""
    if inspect.iscoroutinefunction(fn) or is_async_generator(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - objects with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


def is_async_generator(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` returns an async generator (``async def`` with ``yield``)."""
    if inspect.isasyncgenfunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - objects with an async __call__
    return call is not None and inspect.isasyncgenfunction(call)


def streamed(invoke: Invoke) -> Invoke:
    """``invoke`` for an async generator handler: each value it yields is a partial output
    (:meth:`ToolContext.partial`), the last one its result (``None`` if it yields none)."""

    async def run(args: dict[str, Any], ctx: ToolContext) -> Any:
        last = None
        async for value in invoke(args, ctx):
            ctx.partial(value)
            last = value
        return last

    return run


def from_function(
    fn: Callable[..., Any], *, name: str | None = None, description: str | None = None
) -> ToolDef:
    """Reads a function's signature and docstring into a tool definition.

    Raises :class:`~tooljig.UnsupportedTypeError` for a parameter that cannot be described
    (``*args``, ``**kwargs``, positional-only, a type pydantic has no schema for).
    """
    tool_name = name or getattr(fn, "__name__", None) or type(fn).__name__
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as e:  # NameError for unresolved forward references, and others
        raise UnsupportedTypeError(f"tool {tool_name!r}: cannot resolve its type hints: {e}") from e
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    param_docs = {p.arg_name: (p.description or "").strip() for p in doc.params}

    fields: dict[str, Any] = {}
    ctx_param: str | None = None
    plain = True
    numbers: dict[str, type] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UnsupportedTypeError(
                f"tool {tool_name!r}: parameter {param.name!r} is *args or **kwargs, which a "
                "schema cannot describe; name each argument"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise UnsupportedTypeError(
                f"tool {tool_name!r}: parameter {param.name!r} is positional-only; tool "
                "arguments are passed by name"
            )
        annotation = hints.get(param.name, Any)
        if _is_context(annotation):
            ctx_param = param.name
            continue
        if param.name.startswith("_"):
            raise UnsupportedTypeError(
                f"tool {tool_name!r}: parameter {param.name!r} starts with '_', which pydantic "
                "reserves for private attributes; rename it"
            )
        default = ... if param.default is inspect.Parameter.empty else param.default
        number = _number_of(annotation)
        if number is not None:
            numbers[param.name] = number
        else:
            plain = plain and _is_plain(annotation)
        text = param_docs.get(param.name)
        if text:
            annotation = _with_description(annotation, text)
        fields[param.name] = (annotation, default)

    model = _model(tool_name, fields)
    schema = _input_schema(tool_name, model, fields)
    parts = [doc.short_description, doc.long_description]
    text = description if description is not None else "\n\n".join(p for p in parts if p)
    invoke = _invoker(fn, model if fields and not plain else None, ctx_param)
    if plain and numbers:
        with_model = _invoker(fn, model, ctx_param)
        invoke = _numbers_as_they_are(fn, numbers, with_model=with_model, ctx_param=ctx_param)
    takes_ctx = ctx_param is not None
    if is_async_generator(fn):
        invoke, takes_ctx = streamed(invoke), True
    return ToolDef(tool_name, text.strip(), schema, invoke, is_async_callable(fn), takes_ctx)


def _model(tool_name: str, fields: dict[str, Any]) -> type[pydantic.BaseModel]:
    config = ConfigDict(extra="forbid", protected_namespaces=(), arbitrary_types_allowed=False)
    try:
        with warnings.catch_warnings():
            # A parameter named like a BaseModel attribute (`json`, `copy`) is fine here:
            # the model is only ever used to validate.
            warnings.simplefilter("ignore", UserWarning)
            return pydantic.create_model(f"{tool_name}_arguments", __config__=config, **fields)
    except Exception as e:
        raise _unsupported(tool_name, fields, e) from e


def _input_schema(
    tool_name: str, model: type[pydantic.BaseModel], fields: dict[str, Any]
) -> dict[str, Any]:
    try:
        schema = model.model_json_schema(schema_generator=_NoFieldTitles)
    except Exception as e:
        raise _unsupported(tool_name, fields, e) from e
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def _unsupported(tool_name: str, fields: dict[str, Any], error: Exception) -> UnsupportedTypeError:
    """Names the parameter whose type has no schema."""
    for param, (annotation, _) in fields.items():
        try:
            TypeAdapter(annotation).json_schema()
        except Exception as e:
            return UnsupportedTypeError(
                f"tool {tool_name!r}: parameter {param!r} of type {_type_name(annotation)} has "
                f"no JSON Schema: {_first_line(e)}"
            )
    return UnsupportedTypeError(f"tool {tool_name!r}: {_first_line(error)}")


def _invoker(
    fn: Callable[..., Any], model: type[pydantic.BaseModel] | None, ctx_param: str | None
) -> Invoke:
    """``invoke(arguments, ctx)`` for the engine, specialised so a plain function pays only
    for the call."""
    if model is None:
        if ctx_param is None:
            return lambda args, ctx: fn(**args)

        def with_ctx(args: dict[str, Any], ctx: ToolContext) -> Any:
            args[ctx_param] = ctx
            return fn(**args)

        return with_ctx

    validate = model.__pydantic_validator__.validate_python

    def validated(args: dict[str, Any], ctx: ToolContext) -> Any:
        try:
            kwargs = dict(validate(args).__dict__)
        except pydantic.ValidationError as e:
            # Passed the JSON Schema but not the function's own validators: the model's
            # mistake, shown to it like any other invalid arguments.
            raise _invalid_arguments(e) from None
        if ctx_param is not None:
            kwargs[ctx_param] = ctx
        return fn(**kwargs)

    return validated


def invoker_for_schema(handler: Callable[..., Any]) -> Invoke:
    """``invoke`` for a handler registered with a raw JSON Schema: it is called with the
    arguments dict, plus the context when it takes a second positional parameter."""
    if _takes_second(handler):
        invoke: Invoke = lambda args, ctx: handler(args, ctx)  # noqa: E731
    else:
        invoke = lambda args, ctx: handler(args)  # noqa: E731
    return streamed(invoke) if is_async_generator(handler) else invoke


def takes_context(handler: Callable[..., Any]) -> bool:
    """Whether the invoker :func:`invoker_for_schema` makes for ``handler`` uses the context:
    the handler takes it, or streams (its partial outputs go through it)."""
    return _takes_second(handler) or is_async_generator(handler)


def _takes_second(handler: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [
        p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


def _invalid_arguments(e: pydantic.ValidationError) -> InvalidArguments:
    return InvalidArguments(*((err["loc"], err["msg"]) for err in e.errors(include_url=False)))


def _with_description(annotation: Any, text: str) -> Any:
    """``Annotated[annotation, Field(description=text)]``, placed before the annotation's own
    metadata so that a description given in the user's ``Field(...)`` wins."""
    ours = Field(description=text)
    if get_origin(annotation) is Annotated:
        base, *meta = get_args(annotation)
        return Annotated[(base, ours, *meta)]
    return Annotated[annotation, ours]


def _is_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return _is_context(get_args(annotation)[0])
    if origin in (Union, UnionType):
        args = [a for a in get_args(annotation) if a is not NoneType]
        return len(args) == 1 and args[0] is ToolContext
    return False


def _numbers_as_they_are(
    fn: Callable[..., Any],
    numbers: dict[str, type],
    *,
    with_model: Invoke,
    ctx_param: str | None,
) -> Invoke:
    """``invoke`` for a function whose parameters are plain (:func:`_is_plain`) or numbers
    (:func:`_number_of`): the JSON as is when each number has its parameter's type already, an
    ``int`` given for a ``float`` made one as pydantic makes it (``float(n)``); a call with any
    other number (``3.0`` for an ``int``) goes through pydantic, which converts or refuses it.
    Pydantic's own validation of the same arguments costs about half a microsecond a call."""
    ints = tuple(name for name, tp in numbers.items() if tp is int)
    floats = tuple(name for name, tp in numbers.items() if tp is float)

    def invoke(args: dict[str, Any], ctx: ToolContext) -> Any:
        for name in ints:
            value = args.get(name)
            if value.__class__ is not int and value is not None:
                return with_model(args, ctx)
        for name in floats:
            value = args.get(name)
            if value.__class__ is float or value is None:
                continue
            if value.__class__ is int:
                args[name] = float(value)
                continue
            return with_model(args, ctx)
        if ctx_param is not None:
            args[ctx_param] = ctx
        return fn(**args)

    return invoke


def _number_of(annotation: Any) -> type | None:
    """``int`` or ``float`` for a parameter of that type (optionally ``None``), whose values
    the JSON Schema has checked already; ``None`` for any other type."""
    if get_origin(annotation) in (Union, UnionType):
        args = [a for a in get_args(annotation) if a is not NoneType]
        if len(args) != 1:
            return None
        annotation = args[0]
    return annotation if annotation in (int, float) else None


def _is_plain(annotation: Any) -> bool:
    """Whether pydantic would pass the already-validated JSON through unchanged: strings,
    booleans, string and boolean literals, optionally None."""
    if annotation in (str, bool, NoneType):
        return True
    origin = get_origin(annotation)
    if origin is Literal:
        return all(isinstance(v, (str, bool)) or v is None for v in get_args(annotation))
    if origin in (Union, UnionType):
        return all(_is_plain(a) for a in get_args(annotation))
    return False


def _type_name(tp: Any) -> str:
    return getattr(tp, "__qualname__", None) or repr(tp)


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def output_schema_of(
    spec: Mapping[str, Any] | bool | type | None,
) -> dict[str, Any] | bool | None:
    """An output schema from a dict or a boolean schema (taken as is) or a type (pydantic's
    schema of it)."""
    if spec is None:
        return None
    if isinstance(spec, bool):
        return spec
    if isinstance(spec, Mapping):
        return dict(spec)
    try:
        return json_schema_of(spec, mode="serialization")
    except Exception as e:
        raise UnsupportedTypeError(
            f"output_schema {_type_name(spec)} has no JSON Schema: {_first_line(e)}"
        ) from e
