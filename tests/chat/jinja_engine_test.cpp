// Unit tests of the Jinja engine, independent of real chat templates: statements, filters, tests, methods,
// whitespace control, errors and undefined values. Expected strings are what Python's jinja2 renders
// under the Hugging Face configuration (reference_render.py's environment); syntax-error texts are our own.
#include "runtime/chat/template.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using sluice::chat::jinja_template;
using sluice::chat::template_options;
using sluice::chat::value;

constexpr std::time_t fixed_time = 1768480496; // 2026-01-15 12:34:56 UTC

// Renders `source` with `vars` under Hugging Face options; failures become "ERROR: message".
std::string render(const std::string& source, const value& vars = value::make_dict()) {
    template_options options;
    options.fixed_time = fixed_time;
    auto t = jinja_template::parse(source, options);
    if (!t)
        return "ERROR: " + t.error().message;
    auto r = t->render(vars);
    if (!r)
        return "ERROR: " + r.error().message;
    return *r;
}

value users() {
    auto user = [](const char* name, bool admin) {
        value u = value::make_dict();
        u.as_dict().set("name", value(name));
        u.as_dict().set("admin", value(admin));
        return u;
    };
    value vars = value::make_dict();
    vars.as_dict().set("users", value::make_list({user("al", true), user("bo", false)}));
    value d = value::make_dict();
    d.as_dict().set("a", value(1));
    d.as_dict().set("b", value::make_list({value(2)}));
    vars.as_dict().set("d", d);
    return vars;
}

TEST(jinja_statements, for_loop_exposes_loop_variables) {
    EXPECT_EQ(render("{% for x in [1,2,3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
                     "{{ loop.length }}{{ loop.revindex }}|{% endfor %}"),
              "10TrueFalse33|21FalseFalse32|32FalseTrue31|");
    EXPECT_EQ(render("{% for x in 'abc' %}{{ loop.previtem }}{{ x }}{{ loop.nextitem }} {% endfor %}"), "ab abc bc ");
    EXPECT_EQ(render("{% for x in [1,2,3] %}{{ loop.cycle('a','b') }}{% endfor %}"), "aba");
}

TEST(jinja_statements, for_loop_else_filter_and_unpacking) {
    EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
    EXPECT_EQ(render("{% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.index }}{% endfor %}"), "2142");
    EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"), "a=1;b=2;");
}

TEST(jinja_statements, break_and_continue_end_iterations) {
    EXPECT_EQ(render("{% for x in [1,2,3,4,5] %}{% if x == 2 %}{% continue %}{% endif %}"
                     "{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
              "13");
}

TEST(jinja_statements, set_in_loop_is_scoped_but_namespace_is_shared) {
    EXPECT_EQ(render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"), "1");
    EXPECT_EQ(
        render("{% set ns = namespace(x=1) %}{% for i in [1,2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}"),
        "4");
    EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
    EXPECT_EQ(render("{% set s %}  block {{ 1 }} {% endset %}[{{ s }}]"), "[  block 1 ]");
    EXPECT_EQ(render("{% set s | upper %}abc{% endset %}{{ s }}"), "ABC");
}

TEST(jinja_statements, macros_take_defaults_keywords_and_recurse) {
    EXPECT_EQ(render("{% macro m(a, b='d') %}{{ a }}-{{ b }}{% endmacro %}{{ m(1) }} {{ m(1, 2) }} {{ m(b=3, a=4) }}"),
              "1-d 1-2 4-3");
    EXPECT_EQ(render("{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(3) }}"), "321");
}

TEST(jinja_statements, if_elif_else_filter_block_and_generation) {
    EXPECT_EQ(render("{% if false %}a{% elif none %}b{% elif 0 %}c{% else %}d{% endif %}"), "d");
    EXPECT_EQ(render("{% filter upper %}hello {{ 'x' }}{% endfilter %}"), "HELLO X");
    EXPECT_EQ(render("{% generation %}gen{% endgeneration %}"), "gen");
}

TEST(jinja_undefined, prints_empty_iterates_empty_and_fails_on_use) {
    EXPECT_EQ(render("{{ x }}|{{ x is defined }}|{{ x | default('d') }}|{{ x | length }}|{% for i in x %}no{% endfor %}"
                     "|{{ x is none }}"),
              "|False|d|0||False");
    EXPECT_EQ(render("{{ d.missing }}|{{ d.missing is defined }}|{{ d['missing'] is defined }}", users()),
              "|False|False");
    EXPECT_EQ(render("{{ x.y }}"), "ERROR: UndefinedError: 'x' is undefined");
    EXPECT_EQ(render("{{ d.missing.deeper }}", users()),
              "ERROR: UndefinedError: 'dict object' has no attribute 'missing'");
    EXPECT_EQ(render("{{ x + 1 }}"), "ERROR: UndefinedError: 'x' is undefined");
    EXPECT_EQ(render("{{ x | upper }}|{{ x | trim }}|{{ x | join }}|{{ x | list }}|{{ x | string }}|{{ x | first }}"),
              "|||[]||");
    EXPECT_EQ(render("{{ x | tojson }}"), "ERROR: TypeError: Object of type Undefined is not JSON serializable");
    EXPECT_EQ(render("{{ none | length }}"), "ERROR: TypeError: object of type 'NoneType' has no len()");
    EXPECT_EQ(render("{% if x is not defined %}nd{% endif %}{% if not x %}nx{% endif %}"), "ndnx");
    EXPECT_EQ(
        render("{{ x | default('d', true) }}|{{ '' | default('e') }}|{{ '' | default('f', true) }}|{{ 0 | d(1) }}"),
        "d||f|0");
}

TEST(jinja_tests, type_and_comparison_tests) {
    EXPECT_EQ(render("{{ 'abc' is string }}{{ 1 is string }}{{ {} is mapping }}{{ [] is mapping }}{{ [] is iterable }}"
                     "{{ 1 is number }}{{ 1.5 is float }}{{ 1 is integer }}{{ true is boolean }}{{ none is none }}"),
              "TrueFalseTrueFalseTrueTrueTrueTrueTrueTrue");
    EXPECT_EQ(render("{{ 3 is divisibleby 3 }}{{ 3 is odd }}{{ 'a' in 'cat' }}{{ 2 in [1,2] }}{{ 'k' in {'k': 1} }}"
                     "{{ 3 not in [1] }}{{ 1 is eq 1 }}{{ 1 is ne 1 }}{{ 'A' is upper }}"),
              "TrueTrueTrueTrueTrueTrueTrueFalseTrue");
}

TEST(jinja_expressions, operators_follow_python) {
    EXPECT_EQ(render("{{ 'a' ~ 1 ~ none ~ true }}|{{ 1 + 2.5 }}|{{ 'ab' * 2 }}|{{ [1] + [2] }}|{{ 10 / 4 }}"
                     "|{{ -7 // 2 }}|{{ 2 ** 3 }}|{{ 1 if true else 2 }}|{{ 1 if false }}"),
              "a1NoneTrue|3.5|abab|[1, 2]|2.5|-4|8|1|");
    EXPECT_EQ(render("{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}{{ not 1 == 2 }}{{ 1 != 1 or 2 == 2 and 'x' }}"), "TrueFalseTruex");
    EXPECT_EQ(render("{{ 1 < 'a' }}"), "ERROR: TypeError: '<' not supported between instances of 'int' and 'str'");
    EXPECT_EQ(render("{{ 'a' 'b' }}|{{ [1, 2,] }}|{{ {'a': 1,} }}"), "ab|[1, 2]|{'a': 1}");
}

TEST(jinja_expressions, percent_formats_strings) {
    EXPECT_EQ(render("{{ '%s-%d' % ('a', 3) }}|{{ '%s!' % 'x' }}|{{ '%r' % 'q' }}|{{ '%5.2f|%x' % (3.14159, 255) }}"),
              "a-3|x!|'q'| 3.14|ff");
    EXPECT_EQ(render("{{ '%s and %s' | format(1, 'b') }}"), "1 and b");
}

TEST(jinja_expressions, slicing_and_indexing_count_code_points) {
    EXPECT_EQ(render("{{ 'hello'[1:3] }}|{{ 'hello'[::-1] }}|{{ [1,2,3,4][1:] }}|{{ [1,2,3][-1] }}|{{ 'héllo'[1] }}"
                     "|{{ 'abcdef'[::2] }}"),
              "el|olleh|[2, 3, 4]|3|é|ace");
    EXPECT_EQ(render("{{ {0: 'zero', 2: 'two'}[2] }}|{{ {0: 'a'} | tojson }}|{{ {1: 'a'} }}"),
              "two|{\"0\": \"a\"}|{1: 'a'}");
}

TEST(jinja_expressions, values_print_as_python_str) {
    EXPECT_EQ(render("{{ {'a': [1, 'x', none, true, 1.0]} }}|{{ \"it's\" }}|{{ [\"it's\"] }}|{{ none }}|{{ true }}"
                     "|{{ 1e20 }}|{{ 0.1 + 0.2 }}|{{ 2.0 }}"),
              "{'a': [1, 'x', None, True, 1.0]}|it's|[\"it's\"]|None|True|1e+20|0.30000000000000004|2.0");
}

TEST(jinja_methods, string_methods) {
    EXPECT_EQ(render("{{ ' a b '.strip() }}|{{ 'x,y'.split(',') }}|{{ 'a b  c'.split() }}|{{ 'abc'.startswith('ab') }}"
                     "|{{ 'abc'.endswith(('x','c')) }}|{{ 'ab'.upper() }}|{{ 'a-b-c'.replace('-', '+') }}"
                     "|{{ 'xxhixx'.lstrip('x') }}|{{ 'a b'.rstrip() }}|{{ 'a,b,c'.rsplit(',', 1) }}"),
              "a b|['x', 'y']|['a', 'b', 'c']|True|True|AB|a+b+c|hixx|a b|['a,b', 'c']");
    EXPECT_EQ(render("{{ '{} and {}'.format(1, 'x') }}|{{ 'hello'.find('l') }}|{{ 'Hello World'.title() }}"
                     "|{{ 'hello'.capitalize() }}|{{ 'a\\nb'.splitlines() }}"),
              "1 and x|2|Hello World|Hello|['a', 'b']");
}

TEST(jinja_methods, dict_methods_and_sandbox) {
    EXPECT_EQ(
        render("{{ d.get('a') }}|{{ d.get('z', 5) }}|{{ d.get('z') }}|{{ d.keys() | list }}|{{ d.values() | list }}",
               users()),
        "1|5|None|['a', 'b']|[1, [2]]");
    EXPECT_EQ(render("{{ [].append(1) }}"),
              "ERROR: SecurityError: access to attribute 'append' of 'list' object is unsafe.");
}

TEST(jinja_filters, tojson_matches_python_json_dumps) {
    EXPECT_EQ(render("{{ [1,2] | tojson }}|{{ {'a': 'é\"', 'b': none, 'c': true, 'd': 1.5} | tojson }}"),
              "[1, 2]|{\"a\": \"é\\\"\", \"b\": null, \"c\": true, \"d\": 1.5}");
    EXPECT_EQ(render("{{ {'b': 1, 'a': {'c': []}} | tojson(indent=2) }}"),
              "{\n  \"b\": 1,\n  \"a\": {\n    \"c\": []\n  }\n}");
    EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}|{{ 'é' | tojson(ensure_ascii=true) }}"
                     "|{{ [1,2] | tojson(separators=(',', ':')) }}"),
              "{\"a\": 2, \"b\": 1}|\"\\u00e9\"|[1,2]");
    EXPECT_EQ(render("{{ [1] | map(attribute='x') | tojson }}").rfind("ERROR: TypeError: Object of type generator", 0),
              0u);
}

TEST(jinja_filters, string_and_sequence_filters) {
    EXPECT_EQ(
        render(
            "{{ '  x  ' | trim }}|{{ [1,2,3] | length }}|{{ 'héllo' | length }}|{{ [1,2] | join(', ') }}"
            "|{{ [1,2,3] | first }}|{{ [1,2,3] | last }}|{{ 'ab' | list }}|{{ 5 | string }}|{{ '42' | int + 1 }}"
            "|{{ 'x' | int }}|{{ 3.7 | int }}|{{ 'AbC' | upper }}{{ 'AbC' | lower }}|{{ 'aXa' | replace('a', 'b') }}"),
        "x|3|5|1, 2|1|3|['a', 'b']|5|43|0|3|ABCabc|bXb");
    EXPECT_EQ(render("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(4, first=true) }}|{{ 'a\\n\\nb' | indent(2, "
                     "blank=true) }}"),
              "a\n  b\n\n  c|    a\n    b|a\n  \n  b");
    EXPECT_EQ(render("{{ 'safe'|safe + '<b>' }}|{{ '<b>' | e }}"), "safe&lt;b&gt;|&lt;b&gt;");
}

TEST(jinja_filters, selection_and_ordering_filters) {
    EXPECT_EQ(render("{{ users | map(attribute='name') | join(',') }}|{{ users | selectattr('admin') | "
                     "map(attribute='name') | list }}"
                     "|{{ users | rejectattr('admin') | list | length }}|{{ [1,2,3,4] | select('odd') | list }}"
                     "|{{ [1,2,3,4] | reject('gt', 2) | list }}|{{ ['a','b'] | map('upper') | list }}"
                     "|{{ users | selectattr('name', 'equalto', 'bo') | list | length }}",
                     users()),
              "al,bo|['al']|1|[1, 3]|[1, 2]|['A', 'B']|1");
    EXPECT_EQ(render("{{ [3,1,2] | sort }}|{{ ['b','A','c'] | sort }}|{{ [3,1,2] | sort(reverse=true) }}"
                     "|{{ [1,2,2,1] | unique | list }}|{{ [1,5,3] | max }}{{ [4,2] | min }}|{{ [1,2,3] | sum }}"
                     "|{{ [1,2] | reverse | list }}|{{ 'abc' | reverse }}|{{ -3 | abs }}|{{ 2.567 | round(1) }}"),
              "[1, 2, 3]|['A', 'b', 'c']|[3, 2, 1]|[1, 2]|52|6|[2, 1]|cba|3|2.6");
}

TEST(jinja_globals, hugging_face_globals) {
    EXPECT_EQ(render("{{ raise_exception('bad input: ' ~ 3) }}"), "ERROR: TemplateError: bad input: 3");
    EXPECT_EQ(render("{{ strftime_now('%Y-%m-%d %H:%M') }}"), "2026-01-15 12:34");
    EXPECT_EQ(render("{{ range(3) | list }}|{{ range(1, 7, 2) | list }}|{{ dict(a=1, b=2) }}|{{ namespace(a=1).a }}"),
              "[0, 1, 2]|[1, 3, 5]|{'a': 1, 'b': 2}|1");
}

TEST(jinja_whitespace, trim_blocks_and_lstrip_blocks) {
    EXPECT_EQ(
        render("{{ 'tail' }}\n{% if true %}\n  text\n{% endif %}\n  {% if true %}x{% endif %}\n{# comment #}\nend"),
        "tail\n  text\nxend");
    EXPECT_EQ(render("x\n    {% for i in [1,2] %}\n    {{ i }}\n    {% endfor %}\ny"), "x\n    1\n    2\ny");
}

TEST(jinja_whitespace, minus_strips_and_plus_keeps) {
    EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c\n{{- ' d ' -}}\n e"), "abc d e");
    EXPECT_EQ(render("  {%+ if true %}keep{% endif %}\n    {{ 'v' }}"), "  keep    v");
}

TEST(jinja_whitespace, options_can_turn_trimming_off) {
    template_options options;
    options.trim_blocks = false;
    options.lstrip_blocks = false;
    auto t = jinja_template::parse("  {% if true %}\nx{% endif %}\n", options);
    ASSERT_TRUE(t);
    EXPECT_EQ(*t->render(value::make_dict()), "  \nx\n");
}

TEST(jinja_statements, raw_blocks_are_not_interpreted) {
    EXPECT_EQ(render("a\n  {% raw %}{{ x }}{% if %}{% endraw %}\nb"), "a\n{{ x }}{% if %}b");
    EXPECT_EQ(render("{%- raw -%}  x  {%- endraw -%}  y"), "xy");
}

TEST(jinja_errors, hostile_templates_fail_cleanly) {
    EXPECT_EQ(render("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}")
                  .rfind("ERROR: TemplateSyntaxError: line 1: expression nested too deeply", 0),
              0u);
    std::string nested;
    for (int i = 0; i < 1000; ++i)
        nested += "{% if true %}";
    EXPECT_EQ(render(nested).rfind("ERROR: TemplateSyntaxError: line 1: blocks nested too deeply", 0), 0u);
    EXPECT_EQ(render("{{ range(100000000) | length }}"),
              "ERROR: TemplateLimitError: the template exceeded max_value_bytes = 67108864 (range() of more items than "
              "one list may hold)");
    EXPECT_EQ(render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"),
              "ERROR: TemplateLimitError: the template exceeded max_depth = 400 (nested statements, expressions and "
              "calls)");
}

TEST(jinja_errors, syntax_errors_name_the_line) {
    EXPECT_EQ(render("line1\n{% if x %}\nno end"),
              "ERROR: TemplateSyntaxError: line 3: unexpected end of template, expected 'endif'");
    EXPECT_EQ(render("a\nb\n{{ 1 + }}"), "ERROR: TemplateSyntaxError: line 3: unexpected end of print statement");
    EXPECT_EQ(render("{% frobnicate %}"), "ERROR: TemplateSyntaxError: line 1: unknown tag 'frobnicate'");
    EXPECT_EQ(render("\n\n{{ 'abc }}"), "ERROR: TemplateSyntaxError: line 3: unterminated string literal");
    EXPECT_EQ(render("{% for x in y %}{% endif %}"), "ERROR: TemplateSyntaxError: line 1: unknown tag 'endif'");
}

TEST(jinja_errors, unknown_filter_fails_at_parse_unless_conditional) {
    EXPECT_EQ(render("a\n{{ 1 | nosuchfilter }}"),
              "ERROR: TemplateAssertionError: line 2: No filter named 'nosuchfilter'.");
    EXPECT_EQ(render("{% if false %}{{ 1 | nosuchfilter }}{% endif %}ok"), "ok");
    EXPECT_EQ(render("{% if true %}{{ 1 | nosuchfilter }}{% endif %}"),
              "ERROR: TemplateRuntimeError: No filter named 'nosuchfilter' found.");
    EXPECT_EQ(render("{% if true %}{% for x in [1] %}{{ x is nosuchtest }}{% endfor %}{% endif %}"),
              "ERROR: TemplateAssertionError: line 1: No test named 'nosuchtest'.");
}

} // namespace
