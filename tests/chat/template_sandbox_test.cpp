// The template sandbox: each hostile template of issue 22 (cycles, flat chains, integer traps and wraps,
// exponential macros, doubling strings, the cap bypasses) fails with a clear error, fast and within memory,
// and the depth bound holds on a small thread stack. Before the sandbox each of these crashed the process
// (SIGSEGV, SIGFPE), ran for minutes or took gigabytes.
#include "runtime/chat/template.hpp"

#include <gtest/gtest.h>

#include <pthread.h>

#include <chrono>
#include <string>

namespace {

using sluice::chat::jinja_template;
using sluice::chat::template_limits;
using sluice::chat::template_options;
using sluice::chat::value;

// Renders `source`; failures become "ERROR: message".
std::string render(const std::string& source, const template_limits& limits = {}) {
    template_options options;
    options.limits = limits;
    auto t = jinja_template::parse(source, options);
    if (!t)
        return "ERROR: " + t.error().message;
    auto r = t->render(value::make_dict());
    if (!r)
        return "ERROR: " + r.error().message;
    return *r;
}

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.rfind(prefix, 0) == 0;
}

std::string chain(const std::string& first, const std::string& link, int n) {
    std::string out = first;
    for (int i = 0; i < n; ++i)
        out += link;
    return out;
}

TEST(template_sandbox, namespace_holding_itself_compares_prints_and_refuses_json) {
    const std::string cycle = "{% set ns = namespace() %}{% set ns.x = ns %}";
    EXPECT_EQ(render(cycle + "{{ ns == ns }}"), "True");
    EXPECT_EQ(render(cycle + "{{ ns }}"), "<Namespace {'x': <Namespace {...}>}>");
    EXPECT_EQ(render(cycle + "{{ ns|tojson }}"), "ERROR: TypeError: Object of type Namespace is not JSON serializable");
    EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.x = [ns, 1] %}{{ ns }}|{{ ns.x }}"),
              "<Namespace {'x': [<Namespace {...}>, 1]}>|[<Namespace {'x': [...]}>, 1]");
    EXPECT_EQ(render("{% set ns = namespace(a=1) %}{{ ns == namespace(a=1) }}"), "False");
    EXPECT_EQ(render(cycle + "{{ ns in [ns] }}"), "True");
}

TEST(template_sandbox, flat_chains_of_thirty_thousand_terms_fail_at_parse) {
    for (const std::string& body :
         {chain("1", "~1", 30000), chain("x", "|abs", 30000), chain("a", ".a", 30000), chain("1", "+1", 30000),
          chain("x", "[0]", 30000), chain("f", "()", 30000), chain("1", " if 1 else 1", 30000)}) {
        std::string r = render("{{ " + body + " }}");
        // Chains built by a loop hit the height bound, chains built by recursion (else ... if) the parser's.
        EXPECT_TRUE(starts_with(r, "ERROR: TemplateLimitError: line 1: expression nested too deeply") ||
                    starts_with(r, "ERROR: TemplateSyntaxError: line 1: expression nested too deeply"))
            << r;
    }
}

TEST(template_sandbox, integer_traps_are_errors) {
    const std::string overflow = "ERROR: OverflowError: integer overflow: ";
    EXPECT_TRUE(starts_with(render("{{ (-9223372036854775807-1) // -1 }}"), overflow));
    EXPECT_EQ(render("{{ (-9223372036854775807-1) % -1 }}"), "0");
    EXPECT_EQ(render("{{ 7 // -1 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }}"), "-7 -4 2 -2");
    EXPECT_TRUE(starts_with(render("{{ range(0, -9223372036854775807-1, -1)|length }}"),
                            "ERROR: TemplateLimitError: the template exceeded max_value_bytes"));
    EXPECT_EQ(render("{{ (-9223372036854775807-1) is divisibleby(-1) }}"), "True");
    EXPECT_TRUE(starts_with(render("{{ -(-9223372036854775807-1) }}"), overflow));
    EXPECT_TRUE(starts_with(render("{{ (-9223372036854775807-1)|abs }}"), overflow));
}

TEST(template_sandbox, integer_results_never_wrap) {
    const std::string overflow = "ERROR: OverflowError: integer overflow: ";
    EXPECT_EQ(render("{{ 9223372036854775807*2 }}"),
              "ERROR: OverflowError: integer overflow: 9223372036854775807 * 2 does not fit in 64 bits (template "
              "integers are 64-bit; jinja2's are unbounded)");
    EXPECT_TRUE(starts_with(render("{{ 9223372036854775807 + 1 }}"), overflow));
    EXPECT_TRUE(starts_with(render("{{ -9223372036854775807 - 2 }}"), overflow));
    EXPECT_TRUE(starts_with(render("{{ 10 ** 30 }}"), overflow));
    EXPECT_TRUE(starts_with(render("{{ [9223372036854775807, 1]|sum }}"), overflow));
    EXPECT_TRUE(starts_with(render("{{ 1e300|int }}"), overflow));
    EXPECT_EQ(render("{{ 2 ** 62 }} {{ (-2) ** 63 }} {{ 3 ** 0 }} {{ 1 ** 9223372036854775807 }}"),
              "4611686018427387904 -9223372036854775808 1 1");
    // Found by the jinja fuzzer (std::out_of_range from stoll ended the process): an index after a dot.
    EXPECT_EQ(render("{{ n.99999999999999999999 }}"),
              "ERROR: TemplateSyntaxError: line 1: integer literal 99999999999999999999 does not fit in 64 bits "
              "(template integers are 64-bit)");
    EXPECT_EQ(render("{{ 1e999 }} {{ -1e999 }}"), "inf -inf");
    EXPECT_EQ(render("{{ 99999999999999999999 }}"),
              "ERROR: TemplateSyntaxError: line 1: integer literal 99999999999999999999 does not fit in 64 bits "
              "(template integers are 64-bit)");
}

TEST(template_sandbox, exponential_macro_stops_at_the_step_budget) {
    const std::string source = "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
                               "{{ f(30) }}";
    auto start = std::chrono::steady_clock::now();
    std::string r = render(source);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r, "ERROR: TemplateLimitError: the template exceeded max_steps = 20000000 (evaluation steps)");
    EXPECT_LT(ms, 30000);
    template_limits small;
    small.max_steps = 10'000;
    EXPECT_EQ(render(source, small),
              "ERROR: TemplateLimitError: the template exceeded max_steps = 10000 (evaluation steps)");
}

TEST(template_sandbox, time_budget_stops_a_render) {
    template_limits limits;
    limits.max_time = std::chrono::milliseconds(50);
    std::string r = render("{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}{% endfor "
                           "%}{% endfor %}{% endfor %}",
                           limits);
    EXPECT_EQ(r, "ERROR: TemplateLimitError: the template exceeded max_time = 50 (milliseconds of rendering)");
}

TEST(template_sandbox, doubling_a_string_stops_at_the_value_limit) {
    std::string source = "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}"
                         "{% endfor %}{{ ns.s|length }}";
    EXPECT_EQ(
        render(source),
        "ERROR: TemplateLimitError: the template exceeded max_value_bytes = 67108864 (bytes in one string or list)");
    template_limits limits;
    limits.max_value_bytes = 1 << 20;
    EXPECT_EQ(
        render(source, limits),
        "ERROR: TemplateLimitError: the template exceeded max_value_bytes = 1048576 (bytes in one string or list)");
}

TEST(template_sandbox, cap_bypasses_are_closed) {
    const std::string too_big = "ERROR: TemplateLimitError: the template exceeded max_value_bytes";
    for (const std::string& expr :
         {std::string("range(-(2**62), 2**62)|length"), std::string("([1]*67108864)|length"),
          std::string("[1]|tojson(indent=10**9)"), std::string("('x'*1000)|indent(10**9, true)"),
          std::string("'ab'|replace('', 'x'*60000000)"), std::string("[1]|batch(10**15, 0)|list"),
          std::string("'{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}'.format('x'*10000000)"), std::string("(['x'*1000000]*100)|join"),
          std::string("(['x'*1000000]*100)|string"),
          std::string("['x'*10000000, 'x'*10000000, 'x'*10000000, 'x'*10000000, 'x'*10000000, 'x'*10000000, "
                      "'x'*10000000]|tojson")}) {
        std::string r = render("{{ " + expr + " }}");
        EXPECT_TRUE(starts_with(r, too_big)) << expr << ": " << r;
    }
}

TEST(template_sandbox, output_and_total_bytes_are_bounded) {
    template_limits limits;
    limits.max_output_bytes = 1000;
    EXPECT_EQ(render("{% for i in range(200) %}0123456789{% endfor %}", limits),
              "ERROR: TemplateLimitError: the template exceeded max_output_bytes = 1000 (bytes of rendered text)");
    limits = {};
    limits.max_bytes = 10 << 20;
    EXPECT_EQ(render("{% set ns = namespace(l=[]) %}{% for i in range(100) %}{% set ns.l = ns.l + ['x' * 1000000] %}"
                     "{% endfor %}",
                     limits),
              "ERROR: TemplateLimitError: the template exceeded max_bytes = 10485760 (bytes of values created)");
}

TEST(template_sandbox, values_nested_too_deeply_are_refused) {
    EXPECT_EQ(
        render("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}{% endfor %}"),
        "ERROR: TemplateLimitError: the template exceeded max_nesting = 100 (lists and dicts inside one another)");
    EXPECT_EQ(
        render("{% set ns = namespace(d={}) %}{% for i in range(100000) %}{% set ns.d = {'a': ns.d} %}"
               "{% endfor %}"),
        "ERROR: TemplateLimitError: the template exceeded max_nesting = 100 (lists and dicts inside one another)");
    // A chain of namespaces is built freely (they are freed flat when the render ends) but not printed.
    EXPECT_EQ(render("{% set ns = namespace(n=none) %}{% for i in range(100000) %}{% set ns.n = namespace(n=ns.n) %}"
                     "{% endfor %}{{ ns.n }}"),
              "ERROR: RecursionError: maximum recursion depth exceeded while getting the repr of an object");
    EXPECT_EQ(render("{% set ns = namespace(n=none) %}{% for i in range(100000) %}{% set ns.n = namespace(n=ns.n) %}"
                     "{% endfor %}done"),
              "done");
}

TEST(template_sandbox, wrong_types_are_template_errors_not_crashes) {
    EXPECT_EQ(render("{{ range('a') }}"), "ERROR: TypeError: 'str' object cannot be interpreted as an integer");
    EXPECT_EQ(render("{{ 4 is divisibleby(0) }}"), "ERROR: ZeroDivisionError: integer division or modulo by zero");
    EXPECT_EQ(render("{{ '%d'|format(1e300) }}").rfind("ERROR: OverflowError", 0), 0u);
    EXPECT_EQ(render("{{ '%999999999d'|format(1) }}"),
              "ERROR: ValueError: format width or precision above 99 is not supported");
    EXPECT_EQ(render("{{ '{99999999999999999999999}'.format(1) }}"),
              "ERROR: ValueError: Too many decimal digits in format string");
    EXPECT_EQ(render("{{ [{'a': 1}]|map(attribute='99999999999999999999999')|list }}"), "[Undefined]");
}

// Runs `fn` on a thread with a `stack_bytes` stack.
template <class Fn>
void on_small_stack(std::size_t stack_bytes, Fn fn) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, stack_bytes);
    pthread_t thread;
    auto run = [](void* p) -> void* {
        (*static_cast<Fn*>(p))();
        return nullptr;
    };
    ASSERT_EQ(pthread_create(&thread, &attr, run, &fn), 0);
    pthread_join(thread, nullptr);
    pthread_attr_destroy(&attr);
}

// The deepest templates the limits allow, in every construct, on a 2 MiB stack (a quarter of a default thread's):
// the depth bound, not the size of the stack, is what stops them.
TEST(template_sandbox, depth_bound_holds_on_a_small_stack) {
    std::string results[5];
    on_small_stack(std::size_t{2} << 20, [&] {
        results[0] = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
        results[1] = render("{{ " + chain("1", "~1", 390) + " }}");
        std::string deep_blocks;
        for (int i = 0; i < 190; ++i)
            deep_blocks += "{% if true %}";
        deep_blocks += "{{ " + chain("x", "|default(1)", 380) + " }}";
        for (int i = 0; i < 190; ++i)
            deep_blocks += "{% endif %}";
        results[2] = render(deep_blocks);
        results[3] = render("{% macro f(n) %}{% if true %}{% for i in [1] %}{{ (f(n + 1) ~ 1) ~ 1 }}{% endfor %}"
                            "{% endif %}{% endmacro %}{{ f(0) }}");
        results[4] = render("{% set ns = namespace(l=[]) %}{% for i in range(99) %}{% set ns.l = [ns.l] %}{% endfor %}"
                            "{{ ns.l|tojson|length }} {{ ns.l|string|length }} {{ ns.l == ns.l }}");
    });
    const std::string depth = "ERROR: TemplateLimitError: the template exceeded max_depth = 400";
    EXPECT_TRUE(starts_with(results[0], depth)) << results[0];
    EXPECT_EQ(results[1], "1" + std::string(390, '1'));
    EXPECT_TRUE(starts_with(results[2], depth)) << results[2];
    EXPECT_TRUE(starts_with(results[3], depth)) << results[3];
    EXPECT_EQ(results[4], "200 200 True");
}

} // namespace
