"""helpers/cpp_eval.py, the C++ reader the llama.cpp conformance cases are extracted with: string literals
decoded as a compiler does, and the interpreter on snippets of our own."""

from __future__ import annotations

import pytest
from helpers.cpp_eval import (
    CppError,
    Instance,
    Interpreter,
    Program,
    Unresolved,
    method_call_sites,
    tokenize,
)


def _strings(source: str) -> list[str]:
    return [t.text for t in tokenize(source) if t.kind == "str"]


@pytest.mark.parametrize(
    ("source", "text"),
    [
        (r'"a\nb\t\"c\"\\"', 'a\nb\t"c"\\'),
        (r'"\u00e9\x41\101\0"', "éAA\0"),
        (r'"\xc3\xa9"', "é"),  # bytes, decoded as the UTF-8 they spell
        ('R"(no \\n escapes "here")"', 'no \\n escapes "here"'),
        ('R"#(a )" inside)#"', 'a )" inside'),
        ('u8"上海"', "上海"),
        ('"// not a comment"', "// not a comment"),
    ],
)
def test_string_literals_decode_as_cpp(source: str, text: str) -> None:
    assert _strings(source) == [text]


def test_comments_and_directives_are_skipped_and_lines_counted() -> None:
    tokens = tokenize('#include <x>\n/* a\nb */ // c\nint x = R"(1\n2)";\ny')
    assert [t.text for t in tokens] == ["int", "x", "=", "1\n2", ";", "y"]
    assert tokens[0].line == 4 and tokens[-1].line == 6


@pytest.mark.parametrize("source", ['"open', r'"\q"', 'R"(never closed', "/* open", '"\\xff"'])
def test_malformed_source_is_an_error(source: str) -> None:
    with pytest.raises(CppError):
        tokenize(source)


SNIPPET = r"""
struct item { std::string name; std::string value; std::string id; };
struct box { std::string label = "none"; std::vector<item> items; bool open = true; };
static box make(const std::string & label, const std::string & name = "", const std::string & value = "") {
    box b;
    b.label = label;
    if (!name.empty()) {
        b.items.push_back({ name, value, "" });
    }
    return b;
}
static box with_pairs(const std::vector<std::pair<std::string, std::string>> & pairs) {
    box b;
    for (const auto & [n, v] : pairs) {
        b.items.push_back({ n, v, {} });
    }
    return b;
}
class builder {
    box box_;
  public:
    builder & label(const std::string & text) { box_.label = text; return *this; }
    builder & items(std::vector<item> all) { box_.items = std::move(all); return *this; }
    void done() {}
};
const box first = make("one", "k", "v" "w");
const box second = with_pairs({ { "a", "1" }, { "b", "2" } });
static void chains() {
    unsupported_call(1);
    auto later = unknown_function();
    builder b;
    b.label("x" + std::string("y")).items({ { "n", "v", "i" } }).done();
}
"""


def _program() -> Program:
    program = Program()
    program.read(SNIPPET)
    return program


def test_functions_defaults_braces_and_loops_are_run() -> None:
    program = _program()
    interp = Interpreter(program)
    first = interp.globals.vars["first"]
    assert isinstance(first, Instance) and first.fields["label"] == "one" and first.fields["open"] is True
    assert [(i.fields["name"], i.fields["value"]) for i in first.fields["items"]] == [("k", "vw")]
    second = interp.globals.vars["second"]
    assert [(i.fields["name"], i.fields["value"], i.fields["id"]) for i in second.fields["items"]] == [
        ("a", "1", ""),
        ("b", "2", ""),
    ]


def test_methods_chain_and_failures_are_reported_not_dropped() -> None:
    program = _program()
    seen: list[Instance] = []
    failures: list[str] = []

    def done(obj: Instance, args: list, token: object) -> None:
        seen.append(obj)

    interp = Interpreter(
        program,
        replace={("builder", "done"): done},
        lenient=lambda span: any(t.text == "builder" for t in span.tokens[span.start : span.end]),
        on_failure=lambda span, reason: failures.append(reason),
    )
    interp.call(program.functions["chains"], [])
    assert len(seen) == 1
    made = seen[0].fields["box_"]
    assert made.fields["label"] == "xy"
    assert [(i.fields["name"], i.fields["id"]) for i in made.fields["items"]] == [("n", "i")]
    assert len(failures) == 2 and all("unsupported_call" in r or "unknown_function" in r for r in failures)


def test_a_value_that_cannot_be_made_fails_where_it_is_used() -> None:
    program = Program()
    program.read("struct s { std::string a; clock_thing when = now(); };\nconst s x{};\nconst std::string y = x.a;")
    interp = Interpreter(program)
    assert isinstance(interp.globals.vars["x"].fields["when"], Unresolved)
    assert interp.globals.vars["y"] == ""


def test_method_call_sites_skip_comments_and_strings() -> None:
    tokens = tokenize('a.test(1); // b.test(2)\n"c.test(3)"; d . test (4);')
    sites = list(method_call_sites(tokens, "test"))
    assert [tokens[k - 2].text for k in sites] == ["a", "d"]


def test_a_statement_that_fails_leaves_what_it_changed_unresolved() -> None:
    program = Program()
    program.read(
        "struct s { std::string a; };\nclass probe { public: void look(const s & x) {} };\n"
        'static void run() { s v; v.a = "x" + missing(); probe p; p.look(v); }'
    )
    looked: list[object] = []
    interp = Interpreter(
        program,
        replace={("probe", "look"): lambda obj, args, token: looked.append(args[0])},
        lenient=lambda span: True,
    )
    interp.call(program.functions["run"], [])
    assert len(looked) == 1 and isinstance(looked[0], Unresolved) and "missing" in looked[0].reason
