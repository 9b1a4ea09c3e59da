// The reference side of benchmarks/parser_speed.py and benchmarks/analysis_speed.py: llama.cpp's own
// chat-template handling timed in process, through its public API (common/chat.h), called the way
// llama-server calls it, so that the benchmarks compare against figures measured in the same run on
// the same machine rather than against numbers recorded elsewhere.
//
// Usage: template-analyzer-reference-bench JOBS.json
// JOBS.json is an array of jobs:
//   {"template": "path/to/template.jinja", "tools": [OpenAI tools], "messages": [OpenAI messages],
//    "outputs": ["model output", ...], "repeat": N, "parallel_tool_calls": bool, "enable_thinking": bool}
// (the last two optional: by default what llama-server assumes).
// For each job one JSON line on stdout:
//   {"template": ..., "format": llama.cpp's chosen format, "prompt": the prompt it rendered,
//    "analysis_us": {"median": .., "best": .., "repeat": N}  (templates_init + templates_apply with the
//        tools: loading the template and what a server does with it per request before generating),
//    "init_us": {...}, "apply_us": {...}  (the two apart),
//    "outputs": [{"parse_us": {...}, "content": .., "reasoning_content": ..,
//                 "tool_calls": [{"name": .., "arguments": ..}], "error": ..}]}
// or {"template": ..., "error": ...} when the template could not be loaded or applied. The parsed message
// is printed beside each timing so that the caller can tell a correct read from a parser that failed or
// stopped early: a fast wrong answer is no benchmark figure.

#include "chat.h"
#include "json.h"
#include "log.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using ordered_json = nlohmann::ordered_json;

namespace {

struct timings {
    std::vector<double> us;

    ordered_json summary() const {
        std::vector<double> sorted = us;
        std::sort(sorted.begin(), sorted.end());
        const size_t n = sorted.size();
        const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
        return ordered_json{{"median", median}, {"best", sorted.front()}, {"repeat", n}};
    }
};

template <typename Work> double time_us(Work && work) {
    const auto start = std::chrono::steady_clock::now();
    work();
    const auto stop = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::micro>(stop - start).count();
}

std::string read_file(const std::string & path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw std::runtime_error("cannot read " + path);
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// What llama-server makes of a chat request by default: the OpenAI messages and tools, Jinja on,
// reasoning extracted into reasoning_content ("auto", which amounts to the deepseek format), parallel
// calls as the job says or else as the template's capabilities say.
common_chat_templates_inputs request_inputs(const ordered_json & job, const common_chat_templates * templates) {
    common_chat_templates_inputs inputs;
    inputs.messages = common_chat_msgs_parse_oaicompat(common_json::parse(job.value("messages", ordered_json::array()).dump()));
    inputs.tools    = common_chat_tools_parse_oaicompat(common_json::parse(job.value("tools", ordered_json::array()).dump()));
    inputs.add_generation_prompt = true;
    inputs.use_jinja             = true;
    inputs.parallel_tool_calls   = job.value("parallel_tool_calls", common_chat_templates_get_caps(templates)["supports_parallel_tool_calls"]);
    inputs.reasoning_format      = COMMON_REASONING_FORMAT_DEEPSEEK;
    inputs.enable_thinking       = job.value("enable_thinking", true);
    return inputs;
}

ordered_json parsed_message(const common_chat_msg & msg) {
    ordered_json calls = ordered_json::array();
    for (const auto & call : msg.tool_calls) {
        calls.push_back({{"name", call.name}, {"arguments", call.arguments}, {"id", call.id}});
    }
    return ordered_json{{"content", msg.content}, {"reasoning_content", msg.reasoning_content}, {"tool_calls", calls}};
}

ordered_json run_output(const std::string & output, const common_chat_parser_params & parser_params, int repeat) {
    ordered_json result;
    try {
        // The first parse is the answer; the repeats time it (a parse that throws is not timed).
        result = parsed_message(common_chat_parse(output, /*is_partial=*/false, parser_params));
        timings parse;
        for (int i = 0; i < repeat; i++) {
            parse.us.push_back(time_us([&] { common_chat_parse(output, /*is_partial=*/false, parser_params); }));
        }
        result["parse_us"] = parse.summary();
    } catch (const std::exception & e) {
        result["error"] = e.what();
    }
    return result;
}

ordered_json run_job(const ordered_json & job) {
    ordered_json result{{"template", job.value("template", "")}};
    try {
        const std::string source = read_file(job.at("template").get<std::string>());
        const int repeat = std::max(1, job.value("repeat", 5));
        const common_chat_templates_inputs inputs = request_inputs(job, common_chat_templates_init(nullptr, source).get());

        // llama-server builds its templates once at start-up (init: the Jinja source parsed) and applies
        // them on every request (apply: the autoparser analyses the template, or a hand-written parser is
        // picked, and the prompt and grammar are made). Both are timed, apart and together.
        common_chat_params params;
        timings init, apply, analysis;
        for (int i = 0; i < repeat; i++) {
            common_chat_templates_ptr templates;
            const double init_us  = time_us([&] { templates = common_chat_templates_init(/*model=*/nullptr, source); });
            const double apply_us = time_us([&] { params = common_chat_templates_apply(templates.get(), inputs); });
            init.us.push_back(init_us);
            apply.us.push_back(apply_us);
            analysis.us.push_back(init_us + apply_us);
        }
        result["format"]      = common_chat_format_name(params.format);
        result["prompt"]      = params.prompt;
        result["analysis_us"] = analysis.summary();
        result["init_us"]     = init.summary();
        result["apply_us"]    = apply.summary();

        // As llama-server does per request: the parser params from the apply result, the PEG arena loaded
        // from its serialised form, and the reasoning format the server defaults to.
        common_chat_parser_params parser_params(params);
        parser_params.reasoning_format = COMMON_REASONING_FORMAT_DEEPSEEK;
        parser_params.parse_tool_calls = !inputs.tools.empty();
        if (!params.parser.empty()) {
            parser_params.parser.load(params.parser);
        }

        ordered_json outputs = ordered_json::array();
        for (const auto & output : job.value("outputs", ordered_json::array())) {
            outputs.push_back(run_output(output.get<std::string>(), parser_params, repeat));
        }
        result["outputs"] = outputs;
    } catch (const std::exception & e) {
        result["error"] = e.what();
    }
    return result;
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s JOBS.json\n", argv[0]);
        return 2;
    }
    // llama.cpp logs a warning for every output its parser rejects; the JSON line already says so.
    common_log_set_verbosity_thold(-1);
    ordered_json jobs;
    try {
        jobs = ordered_json::parse(read_file(argv[1]));
    } catch (const std::exception & e) {
        std::fprintf(stderr, "%s: %s\n", argv[1], e.what());
        return 2;
    }
    if (!jobs.is_array()) {
        std::fprintf(stderr, "%s: expected a JSON array of jobs\n", argv[1]);
        return 2;
    }
    for (const auto & job : jobs) {
        std::cout << run_job(job).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    }
    return 0;
}
