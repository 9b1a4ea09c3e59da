"""The two sandboxed engines behind ``compile_template``: transformers-like behaviour, sandbox, limits,
and agreement with each other on the real corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.choices import DEFAULT_ENGINE
from analyzer.errors import InputError, RenderError, RenderLimitError, TemplateSyntaxError
from analyzer.render.engines import compile_mutable, compile_template, get_engine
from analyzer.render.minijinja_engine import rewrite_generation_tags
from analyzer.render.sandbox import FIXED_NOW, IndentedJsonMemo, RenderLimits, tojson
from analyzer.template import Template

ENGINES = ("jinja2", "minijinja")
USER_HI = [{"role": "user", "content": "hi"}]


def tpl(source: str, **kw: object) -> Template:
    return Template(source=source, name="probe", origin="mem:probe", **kw)  # type: ignore[arg-type]


def render(
    source: str,
    engine: str,
    messages: list | None = None,
    *,
    limits: RenderLimits | None = None,
    template_kw: dict | None = None,
    **kw: object,
) -> str:
    compiled = compile_template(tpl(source, **(template_kw or {})), engine, limits)
    return compiled.render([] if messages is None else messages, **kw)  # type: ignore[arg-type]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


# --------------------------------------------------------------------------- registry


def test_registry() -> None:
    assert DEFAULT_ENGINE == "minijinja"
    assert get_engine("jinja2").name == "jinja2"
    assert compile_template(tpl("x"), "jinja2").engine == "jinja2"
    assert compile_template(tpl("x")).engine == "minijinja"
    with pytest.raises(RenderError, match=r"unknown engine 'nope'; choose one of jinja2, minijinja"):
        get_engine("nope")


# --------------------------------------------------------------------------- transformers-like behaviour


def test_trim_and_lstrip_blocks(engine: str) -> None:
    # trim_blocks drops the newline after a block tag; lstrip_blocks drops the indentation before one.
    source = "{% if true %}\n  A\n{% endif %}\n  {% if true %}\nB\n  {% endif %}\nC"
    assert render(source, engine) == "  A\nB\nC"


def test_trim_blocks_leaves_expressions_alone(engine: str) -> None:
    # Whitespace around expressions stays; one trailing newline of the template is dropped
    # (keep_trailing_newline is off in transformers too).
    assert render("{{ 'x' }}\n  {{ 'y' }}\n", engine) == "x\n  y"
    assert render("{{ 'x' }}\n\n", engine) == "x\n"


def test_loop_controls(engine: str) -> None:
    source = (
        "{% for i in range(10) %}{% if i == 1 %}{% continue %}{% endif %}"
        "{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}"
    )
    assert render(source, engine) == "023"


def test_generation_tag_renders_its_body(engine: str) -> None:
    assert render("a{% generation %}b{{ 1 + 1 }}{% endgeneration %}c", engine) == "ab2c"
    assert render("a {%- generation -%} b {%- endgeneration -%} c", engine) == "abc"


def test_rewrite_generation_tags() -> None:
    assert rewrite_generation_tags("{%- generation %}x{% endgeneration -%}") == "{%- if true %}x{% endif -%}"
    assert rewrite_generation_tags("{{ generation }}") == "{{ generation }}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # non-ASCII kept, no HTML escaping of < > &
        ("{{ {'k': '<a&b>', 'e': 'é'} | tojson }}", '{"k": "<a&b>", "e": "é"}'),
        ("{{ {'k': '<a&b>', 'e': 'é'} | tojson(ensure_ascii=False) }}", '{"k": "<a&b>", "e": "é"}'),
        ("{{ 'é' | tojson(ensure_ascii=True) }}", '"\\u00e9"'),
        ("{{ {'b': [1, 2], 'a': 'x'} | tojson(indent=2) }}", '{\n  "b": [\n    1,\n    2\n  ],\n  "a": "x"\n}'),
        ("{{ {'b': 1, 'a': 2} | tojson(sort_keys=True) }}", '{"a": 2, "b": 1}'),
        ("{{ {'b': 1, 'a': [1, 2]} | tojson(separators=(',', ':')) }}", '{"b":1,"a":[1,2]}'),
        ("{{ none | tojson }} {{ true | tojson }} {{ 1.5 | tojson }}", "null true 1.5"),
    ],
)
def test_tojson_like_transformers(engine: str, source: str, expected: str) -> None:
    assert render(source, engine) == expected


INDENTED = [
    ({"b": [1, 2.5, None], "a": {"é": "<x>"}}, {"indent": 2}),
    ({"b": [1, 2.5, None], "a": {"é": "<x>"}}, {"indent": 4, "sort_keys": True}),
    ({"b": [1, 2.5, None], "a": {"é": "<x>"}}, {"indent": 4, "ensure_ascii": True}),
    ({"b": [1, 2.5, None], "a": {"é": "<x>"}}, {"indent": "\t", "separators": [",", ": "]}),
    ({1: "int key", "1": "str key", None: []}, {"indent": 2}),
    ([{"k": float("nan")}, {}, []], {"indent": 0}),
]


def test_indented_tojson_remembered_is_written_as_json_writes_it() -> None:
    """The same value twice (the second from the memo) and a value that differs only where compact
    text shows it: each exactly what json writes."""
    memo = IndentedJsonMemo()
    for _ in range(2):
        for value, options in INDENTED:
            assert memo(value, **options) == tojson(value, **options)
    assert memo({"a": 1}, indent=2) != memo({"a": "1"}, indent=2)
    assert memo({"a": 1}, indent=2) != memo({"a": 1}, indent=3)


def test_indented_tojson_refuses_what_json_refuses() -> None:
    memo = IndentedJsonMemo()
    with pytest.raises(TypeError, match="map"):
        memo({"a": map(str, [])}, indent=2)
    looped: list[object] = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular"):
        memo(looped, indent=2)


def test_indented_tojson_memo_is_bounded() -> None:
    memo = IndentedJsonMemo()
    for n in range(IndentedJsonMemo.KEPT * 2):
        assert memo({"n": n}, indent=2) == tojson({"n": n}, indent=2)
    long = {"text": "x" * (IndentedJsonMemo.LONGEST + 1)}
    assert memo(long, indent=2) == tojson(long, indent=2)
    assert len(memo._written) == IndentedJsonMemo.KEPT


def test_raise_exception(engine: str) -> None:
    with pytest.raises(RenderError) as info:
        render("before{{ raise_exception('no system role: ' ~ 42) }}", engine)
    err = info.value
    assert type(err) is RenderError
    assert err.raised_by_template is True
    assert str(err) == "probe: template raised: no system role: 42"
    assert err.exit_code == 2


def test_ordinary_render_error_is_not_raised_by_template(engine: str) -> None:
    with pytest.raises(RenderError) as info:
        render("{{ 1 / 0 }}", engine)
    assert info.value.raised_by_template is False
    assert not isinstance(info.value, RenderLimitError)
    assert str(info.value).startswith("probe: ")
    assert "\n" not in str(info.value)


def test_strftime_now_is_fixed(engine: str) -> None:
    assert render("{{ strftime_now('%Y-%m-%d') }}", engine) == "2025-01-15"
    assert render("{{ strftime_now('%d %b %Y %H:%M') }}", engine) == "15 Jan 2025 09:30"
    assert FIXED_NOW.isoformat() == "2025-01-15T09:30:00"


def test_default_special_tokens(engine: str) -> None:
    assert render("{{ bos_token }}|{{ eos_token }}", engine) == "<s>|</s>"


def test_template_special_tokens(engine: str) -> None:
    out = render(
        "{{ bos_token }}|{{ eos_token }}",
        engine,
        template_kw={"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    )
    assert out == "<|begin_of_text|>|<|eot_id|>"
    # An empty token is a real value, not "missing".
    assert render("[{{ bos_token }}]", engine, template_kw={"bos_token": ""}) == "[]"


def test_standard_context(engine: str) -> None:
    source = (
        "{{ messages | length }}:{{ messages[0].role }}:{{ messages[0]['content'] }}:"
        "{{ tools | length if tools else 'none' }}:{{ add_generation_prompt }}"
    )
    assert render(source, engine, USER_HI) == "1:user:hi:none:False"
    tools = [{"type": "function", "function": {"name": "read_file"}}]
    assert render(source, engine, USER_HI, tools=tools, add_generation_prompt=True) == "1:user:hi:1:True"
    assert render("{{ tools[0].function.name }}", engine, USER_HI, tools=tools) == "read_file"


def test_extra_context(engine: str) -> None:
    source = "{{ foo }}-{{ enable_thinking }}-{{ nested.k[1] }}"
    out = render(source, engine, extra={"foo": "bar", "enable_thinking": False, "nested": {"k": [1, 2]}})
    assert out == "bar-False-2"


def test_extra_overrides_standard_variables(engine: str) -> None:
    assert render("{{ bos_token }}", engine, extra={"bos_token": "<BOS>"}) == "<BOS>"


def test_context_values_that_are_not_json_still_render(engine: str) -> None:
    # A set is not JSON: the per-render copy falls back to a Python copy.
    out = render("{{ s | length }}|{{ t[1] }}|{{ t | length }}", engine, extra={"s": {1, 2}, "t": ("x", "y")})
    assert out == "2|y|2"


def test_non_string_dict_keys_survive_the_copy(engine: str) -> None:
    assert render("{{ m[1] }}", engine, extra={"m": {1: "a"}}) == "a"


def test_dict_keys_in_context_copy_are_consistent(engine: str) -> None:
    # The same value renders the same whether or not another context value is JSON-serialisable.
    source = "{{ m[1] }}|{{ m['1'] }}"
    assert render(source, engine, extra={"m": {1: "a"}}) == render(source, engine, extra={"m": {1: "a"}, "s": {0}})


# --------------------------------------------------------------------------- sandbox


def test_template_cannot_mutate_callers_messages(engine: str) -> None:
    messages = [{"role": "user", "content": "hi"}]
    compiled = compile_template(tpl("{% set _ = messages.append(1) %}{{ messages | length }}"), engine)
    if engine == "jinja2":
        # the immutable sandbox refuses list.append
        with pytest.raises(RenderError, match="SecurityError: access to attribute 'append' of 'list' object is unsafe"):
            compiled.render(messages)
    else:
        # minijinja calls the method, but on a per-render deep copy
        assert compiled.render(messages) == "2"
        assert compiled.render(messages) == "2"
    assert messages == [{"role": "user", "content": "hi"}]


def test_template_cannot_mutate_callers_nested_values() -> None:
    # minijinja only: jinja2 refuses the calls outright (checked above).
    messages = [{"role": "user", "content": "hi", "parts": [1]}]
    tools = [{"type": "function", "function": {"name": "f"}}]
    extra = {"bag": {"x": 1}}
    source = (
        "{% set _ = messages[0].parts.append(2) %}{% set _ = messages[0].update({'role': 'x'}) %}"
        "{% set _ = tools.clear() %}{% set _ = bag.pop('x') %}"
        "{{ messages[0].role }}{{ messages[0].parts | length }}{{ tools | length }}{{ bag | length }}"
    )
    assert compile_template(tpl(source), "minijinja").render(messages, tools=tools, extra=extra) == "x200"
    assert messages == [{"role": "user", "content": "hi", "parts": [1]}]
    assert tools == [{"type": "function", "function": {"name": "f"}}]
    assert extra == {"bag": {"x": 1}}


def test_mutable_jinja2_lets_templates_build_lists_but_not_touch_the_caller() -> None:
    messages = [{"role": "user", "content": "hi"}]
    source = (
        "{% set ns = [] %}{% set _ = ns.append(1) %}{% set _ = ns.append('b') %}"
        "{% set _ = messages.append(2) %}{{ ns }}{{ messages | length }}"
    )
    compiled = compile_mutable(tpl(source))
    assert compiled.engine == "jinja2-mutable"
    assert compiled.render(messages) == "[1, 'b']2"
    assert compiled.render(messages) == "[1, 'b']2"
    assert messages == [{"role": "user", "content": "hi"}]
    # the immutable default refuses the template's own list too
    with pytest.raises(RenderError, match="SecurityError"):
        compile_template(tpl("{% set ns = [] %}{% set _ = ns.append(1) %}{{ ns }}"), "jinja2").render([])


def test_mutable_jinja2_is_still_sandboxed() -> None:
    with pytest.raises(RenderError, match="SecurityError: access to attribute '__class__' of 'str' object is unsafe"):
        compile_mutable(tpl("{{ ''.__class__.__mro__[1].__subclasses__() }}")).render([])


def test_jinja2_cannot_reach_python_internals() -> None:
    with pytest.raises(RenderError) as info:
        render("{{ ''.__class__.__mro__[1].__subclasses__() }}", "jinja2")
    assert "SecurityError" in str(info.value)
    assert "unsafe" in str(info.value)
    assert info.value.raised_by_template is False


def test_minijinja_cannot_reach_python_internals() -> None:
    with pytest.raises(RenderError) as info:
        render("{{ ''.__class__.__mro__[1].__subclasses__() }}", "minijinja")
    assert "undefined" in str(info.value)


def test_dunder_attributes_are_undefined(engine: str) -> None:
    # No engine shows the Python class of what it was given.
    assert render("{{ messages.__class__ }}|{{ messages.__len__ }}", engine, USER_HI) == "|"


# --------------------------------------------------------------------------- limits


def test_endless_loop_without_output_stops(engine: str) -> None:
    source = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    with pytest.raises(RenderLimitError) as info:
        render(source, engine, limits=RenderLimits(seconds=0.5, fuel=2_000_000))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("probe: render ran past ")
    if engine == "jinja2":
        assert message == "probe: render ran past the 0.5 s time limit"
    else:
        assert message == "probe: render ran past its instruction budget (2000000 fuel)"


def test_output_size_limit_many_chunks(engine: str) -> None:
    source = "{% for i in range(10000) %}xxxxxxxxxx{% endfor %}"
    with pytest.raises(RenderLimitError) as info:
        render(source, engine, limits=RenderLimits(max_chars=1000))
    assert str(info.value) == "probe: render output passed the 1000 character limit"


def test_output_size_limit_one_big_chunk(engine: str) -> None:
    with pytest.raises(RenderLimitError) as info:
        render("{{ 'x' * 3000000 }}", engine)  # default limit: 2,000,000 characters
    if engine == "jinja2":  # sized before it is built
        assert (
            str(info.value)
            == "probe: the template builds a value of 3000000 characters or items, past the 2000000 limit"
        )
    else:
        assert str(info.value) == "probe: render output passed the 2000000 character limit"


def test_output_at_the_limit_is_allowed(engine: str) -> None:
    out = render("{% for i in range(100) %}xxxxxxxxxx{% endfor %}", engine, limits=RenderLimits(max_chars=1000))
    assert out == "x" * 1000


def test_deep_recursion_is_a_render_error(engine: str) -> None:
    source = "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"
    with pytest.raises(RenderError) as info:
        render(source, engine, limits=RenderLimits(seconds=0.5, fuel=2_000_000))
    assert "\n" not in str(info.value)
    assert info.value.raised_by_template is False


def test_limit_error_is_a_render_error() -> None:
    assert issubclass(RenderLimitError, RenderError)
    assert RenderLimits() == RenderLimits(seconds=2.0, max_chars=2_000_000, fuel=5_000_000)


def test_time_waited_does_not_count_against_the_budget(engine: str) -> None:
    """The limits count processor time: a process that was not running (a busy machine) keeps its budget."""
    import time

    limits = RenderLimits(budget_seconds=0.2).started()
    time.sleep(0.4)
    limits.check_budget("probe")
    assert render("{{ 1 }}", engine, limits=limits) == "1"


def test_compiled_template_renders_again_after_a_limit(engine: str) -> None:
    compiled = compile_template(tpl("{% for i in range(n) %}x{% endfor %}"), engine, RenderLimits(max_chars=5))
    with pytest.raises(RenderLimitError):
        compiled.render([], extra={"n": 6})
    assert compiled.render([], extra={"n": 5}) == "xxxxx"


# --------------------------------------------------------------------------- syntax errors


def test_syntax_error_names_origin_and_line(engine: str) -> None:
    with pytest.raises(TemplateSyntaxError) as info:
        compile_template(tpl("line one\n{% if %}\n{% endif %}"), engine)
    message = str(info.value)
    assert message.startswith("mem:probe: Jinja syntax error at line 2: ")
    assert "\n" not in message
    assert isinstance(info.value, InputError)
    assert info.value.exit_code == 2


def test_unclosed_block_is_a_syntax_error(engine: str) -> None:
    with pytest.raises(TemplateSyntaxError, match=r"^mem:probe: Jinja syntax error"):
        compile_template(tpl("{% for m in messages %}{{ m }}"), engine)


# --------------------------------------------------------------------------- the corpus

# Templates where rendering a single user message (add_generation_prompt, tools=None) does not give the
# same output in both engines: engine -> "ok" or the start of the error message (after "<name>: ").
KNOWN_USER_ONLY_DIFFERENCES: dict[str, dict[str, str]] = {
    # minijinja iterates None as empty; jinja2 raises on `for t in tools` with tools=None.
    "CohereForAI-c4ai-command-r-plus-tool_use": {
        "jinja2": "TypeError: 'NoneType' object is not iterable",
        "minijinja": "ok",
    },
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": {
        "jinja2": "TypeError: 'NoneType' object is not iterable",
        "minijinja": "ok",
    },
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": {
        "jinja2": "TypeError: 'NoneType' object is not iterable",
        "minijinja": "ok",
    },
    # expects a `functions` variable: both engines fail.
    "fireworks-ai-llama-3-firefunction-v2": {
        "jinja2": "UndefinedError: 'functions' is undefined",
        "minijinja": "invalid operation: tried to use + operator on unsupported types string and undefined",
    },
}


def _render_status(path: Path, engine: str) -> tuple[str, str | None]:
    template = Template(source=path.read_text(encoding="utf-8"), name=path.stem, origin=str(path))
    try:
        out = compile_template(template, engine).render(USER_HI, add_generation_prompt=True)
    except RenderError as exc:
        message = str(exc)
        assert "\n" not in message
        assert message.startswith(f"{path.stem}: ")
        return message[len(path.stem) + 2 :], None
    return "ok", out


def test_known_differences_are_in_the_corpus(corpus_paths: list[Path]) -> None:
    names = {p.stem for p in corpus_paths}
    assert len(corpus_paths) == 70
    assert set(KNOWN_USER_ONLY_DIFFERENCES) <= names


def test_corpus_user_only_engines_agree(corpus_paths: list[Path]) -> None:
    agreed = 0
    for path in corpus_paths:
        j2_status, j2_out = _render_status(path, "jinja2")
        mj_status, mj_out = _render_status(path, "minijinja")
        known = KNOWN_USER_ONLY_DIFFERENCES.get(path.stem)
        if known is None:
            assert (j2_status, mj_status) == ("ok", "ok"), path.stem
            assert j2_out == mj_out, path.stem
            assert j2_out, path.stem  # a real prompt, not nothing
            agreed += 1
        else:
            assert j2_status.startswith(known["jinja2"]), (path.stem, j2_status)
            assert mj_status.startswith(known["minijinja"]), (path.stem, mj_status)
    assert agreed == 70 - len(KNOWN_USER_ONLY_DIFFERENCES)


def test_corpus_user_content_reaches_the_prompt(corpus_paths: list[Path]) -> None:
    # The sentinel user text shows up in every render that succeeds (a render is not just boilerplate).
    messages = [{"role": "user", "content": "SENTINEL_USER_7f3a"}]
    for path in corpus_paths:
        template = Template(source=path.read_text(encoding="utf-8"), name=path.stem, origin=str(path))
        try:
            out = compile_template(template, "minijinja").render(messages, add_generation_prompt=True)
        except RenderError:
            assert path.stem == "fireworks-ai-llama-3-firefunction-v2"
            continue
        assert out.count("SENTINEL_USER_7f3a") >= 1, path.stem


def test_the_command_line_offers_exactly_the_engines() -> None:
    """The CLI reads engine names from analyzer.choices (no library import at start-up): they must be the
    engines there are."""
    from analyzer.choices import DEFAULT_ENGINE, ENGINE_NAMES
    from analyzer.render.engines import ENGINES

    assert sorted(ENGINES) == sorted(ENGINE_NAMES) and DEFAULT_ENGINE in ENGINES
