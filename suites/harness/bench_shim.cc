// bench_shim.cc -- Google Benchmark from C; the project's one C++ file (see
// bench_shim.h). Builds against Google Benchmark 1.7 (Debian's
// libbenchmark-dev) and 1.8 (which renamed Run::error_occurred to skipped).
#include "bench_shim.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

struct Registration {
    std::string name;
    hb_gb_body body;
    void *user;
    int next_repetition = 0;
};

// Run::error_occurred (1.7) or Run::skipped (1.8+), whichever there is.
template <typename R>
auto run_failed(const R &r, int) -> decltype(r.error_occurred, std::pair<bool, std::string>())
{
    return {r.error_occurred, r.error_message};
}
template <typename R>
auto run_failed(const R &r, long) -> decltype(r.skipped, std::pair<bool, std::string>())
{
    return {static_cast<int>(r.skipped) != 0, r.skip_message};
}

void copy_counter(hb_counter *dst, const std::string &name, double value)
{
    std::snprintf(dst->name, sizeof dst->name, "%s", name.c_str());
    dst->value = value;
}

// Google Benchmark's lifetime in this process: Initialize once, Shutdown
// once (bench_shim.h says why).
enum class Lifetime { fresh, initialized, shut_down };
Lifetime lifetime = Lifetime::fresh;

}  // namespace

struct hb_gbench {
    std::vector<std::string> args;  // argv for Initialize; Google Benchmark keeps argv[0]
    std::vector<char *> argv;
    std::deque<Registration> regs;  // stable addresses for the lambdas
    std::map<std::string, Registration *> by_name;
};

namespace {

// Hands every run Google Benchmark reports back to C.
class CReporter : public benchmark::BenchmarkReporter {
  public:
    CReporter(hb_gbench *g, hb_gb_report report, void *user) : g_(g), report_(report), user_(user) {}

    bool ReportContext(const Context &) override { return true; }

    void ReportRuns(const std::vector<Run> &runs) override
    {
        for (const Run &r : runs) {
            hb_gb_run c;
            std::memset(&c, 0, sizeof c);
            const std::string &name = r.run_name.function_name;
            auto it = g_->by_name.find(name);
            c.run_name = name.c_str();
            c.user = it == g_->by_name.end() ? nullptr : it->second->user;
            c.aggregate = r.run_type == Run::RT_Aggregate;
            c.aggregate_name = r.aggregate_name.c_str();
            c.aggregate_unit = r.aggregate_unit == benchmark::kPercentage ? "percentage" : "time";
            c.family_index = r.family_index;
            c.per_family_instance_index = r.per_family_instance_index;
            c.repetitions = r.repetitions;
            c.repetition_index = r.repetition_index;
            c.threads = r.threads;
            c.iterations = static_cast<int64_t>(r.iterations);
            // We register microseconds; a percentage aggregate (cv) is a plain
            // ratio, which Google Benchmark's JSON writes unscaled.
            if (c.aggregate && r.aggregate_unit == benchmark::kPercentage) {
                c.real_time = r.real_accumulated_time;
                c.cpu_time = r.cpu_accumulated_time;
            } else {
                c.real_time = r.GetAdjustedRealTime();
                c.cpu_time = r.GetAdjustedCPUTime();
            }
            std::pair<bool, std::string> failed = run_failed(r, 0);
            c.error = failed.first;
            c.error_message = failed.second.c_str();
            for (const auto &kv : r.counters) {
                if (c.ncounters >= HB_MAX_COUNTERS) break;
                copy_counter(&c.counters[c.ncounters++], kv.first, kv.second.value);
            }
            report_(user_, &c);
            ++reported_;
        }
    }

    int reported() const { return reported_; }

  private:
    hb_gbench *g_;
    hb_gb_report report_;
    void *user_;
    int reported_ = 0;
};

}  // namespace

extern "C" {

hb_gbench *hb_gb_new(void)
{
    try {
        return new hb_gbench();
    } catch (...) {
        return nullptr;
    }
}

void hb_gb_free(hb_gbench *g)
{
    if (!g) return;
    benchmark::ClearRegisteredBenchmarks();
    delete g;
}

void hb_gb_shutdown(void)
{
    if (lifetime == Lifetime::initialized) benchmark::Shutdown();
    lifetime = Lifetime::shut_down;
}

bool hb_gb_init(hb_gbench *g, const char *argv0, int nflags, char **flags, char *why, size_t nwhy)
{
    if (lifetime != Lifetime::fresh) {
        std::snprintf(why, nwhy, "Google Benchmark was %s in this process; it is initialized once",
                      lifetime == Lifetime::initialized ? "already initialized" : "shut down");
        return false;
    }
    g->args.clear();
    g->args.emplace_back(argv0 ? argv0 : "run_suite");
    for (int i = 0; i < nflags; i++) g->args.emplace_back(flags[i]);
    g->argv.clear();
    for (std::string &s : g->args) g->argv.push_back(&s[0]);
    g->argv.push_back(nullptr);
    int argc = static_cast<int>(g->args.size());
    lifetime = Lifetime::initialized;
    benchmark::Initialize(&argc, g->argv.data());
    if (argc > 1) {  // Initialize leaves what it did not recognize
        std::string left;
        for (int i = 1; i < argc; i++) left += std::string(i > 1 ? " " : "") + g->argv[i];
        std::snprintf(why, nwhy, "not a Google Benchmark flag: %s", left.c_str());
        return false;
    }
    return true;
}

bool hb_gb_register(hb_gbench *g, const char *name, int repetitions, hb_gb_body body, void *user)
{
    if (g->by_name.count(name)) return false;
    g->regs.push_back(Registration{name, body, user});
    Registration *reg = &g->regs.back();
    g->by_name[reg->name] = reg;
    benchmark::RegisterBenchmark(reg->name.c_str(),
                                 [reg](benchmark::State &st) {
                                     hb_gb_result r;
                                     std::memset(&r, 0, sizeof r);
                                     reg->body(reg->user, reg->next_repetition++, &r);
                                     if (r.failed) {
                                         st.SkipWithError(r.message);  // before the loop: it is not entered
                                         for (auto _ : st) {
                                         }
                                         return;
                                     }
                                     for (auto _ : st) st.SetIterationTime(r.seconds);
                                     for (int i = 0; i < r.ncounters; i++)
                                         if (r.counters[i].value == r.counters[i].value)  // not NaN
                                             st.counters[r.counters[i].name] = benchmark::Counter(r.counters[i].value);
                                 })
        ->Iterations(1)
        ->Repetitions(repetitions < 1 ? 1 : repetitions)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    return true;
}

int hb_gb_run_all(hb_gbench *g, hb_gb_report report, void *user)
{
    CReporter reporter(g, report, user);
    benchmark::RunSpecifiedBenchmarks(&reporter);
    return reporter.reported();
}

void hb_gb_host_info(hb_host_info *out)
{
    std::memset(out, 0, sizeof *out);
    const benchmark::CPUInfo &cpu = benchmark::CPUInfo::Get();
    const benchmark::SystemInfo &sys = benchmark::SystemInfo::Get();
    std::time_t now = std::time(nullptr);
    std::tm local;
    localtime_r(&now, &local);
    char tz[8] = "";
    std::strftime(out->date, sizeof out->date, "%Y-%m-%dT%H:%M:%S", &local);
    if (std::strftime(tz, sizeof tz, "%z", &local) == 5)  // +0100 -> +01:00, as Google Benchmark writes it
        std::snprintf(out->date + std::strlen(out->date), sizeof out->date - std::strlen(out->date), "%.3s:%.2s", tz,
                      tz + 3);
    std::snprintf(out->host_name, sizeof out->host_name, "%s", sys.name.c_str());
    // out->executable is the caller's to fill: Google Benchmark keeps only a
    // pointer to the argv[0] it was initialized with, gone with hb_gb_free.
    out->num_cpus = cpu.num_cpus;
    out->mhz_per_cpu = cpu.cycles_per_second / 1e6;
    out->cpu_scaling = cpu.scaling == benchmark::CPUInfo::ENABLED ? 1 : cpu.scaling == benchmark::CPUInfo::DISABLED ? 0 : -1;
    for (const auto &c : cpu.caches) {
        if (out->ncaches >= 8) break;
        hb_cache_info *d = &out->caches[out->ncaches++];
        std::snprintf(d->type, sizeof d->type, "%s", c.type.c_str());
        d->level = c.level;
        d->size = c.size;
        d->num_sharing = c.num_sharing;
    }
    for (double l : cpu.load_avg) {
        if (out->nload >= 3) break;
        out->load_avg[out->nload++] = l;
    }
#ifdef NDEBUG
    std::snprintf(out->library_build_type, sizeof out->library_build_type, "release");
#else
    std::snprintf(out->library_build_type, sizeof out->library_build_type, "debug");
#endif
}

}  // extern "C"
