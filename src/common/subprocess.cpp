#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string_view>

#include "polygraphy/common/exception.h"

extern char** environ;

namespace polygraphy {
namespace {

std::string quote_command(const std::vector<std::string>& argv) {
    std::string out;
    for (const auto& arg : argv) out += (out.empty() ? "" : " ") + arg;
    return out;
}

// Closes a descriptor once (on every path out of run_process).
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() { reset(); }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }
    void reset() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    int* out() { return &fd_; }

private:
    int fd_ = -1;
};

void make_pipe(Fd& read_end, Fd& write_end, const std::string& command) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw PolygraphyException("Could not start check command '" + command + "': pipe: " + std::strerror(errno));
    *read_end.out() = fds[0];
    *write_end.out() = fds[1];
}

// posix_spawn attributes and file actions, destroyed on every path.
struct SpawnSetup {
    posix_spawn_file_actions_t actions{};
    posix_spawnattr_t attributes{};
    SpawnSetup() {
        posix_spawn_file_actions_init(&actions);
        posix_spawnattr_init(&attributes);
    }
    ~SpawnSetup() {
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attributes);
    }
    SpawnSetup(const SpawnSetup&) = delete;
    SpawnSetup& operator=(const SpawnSetup&) = delete;
};

// The command runs in its own process group (so a timeout can kill everything it started), which
// also shields it from the terminal's Ctrl-C. While it runs, SIGINT and SIGTERM sent to this process
// are therefore caught, the command's group is killed, and the signal is raised again once the
// command is reaped, so that interrupting the tool never leaves the command running.
volatile std::sig_atomic_t g_interrupt_signal = 0;

extern "C" void record_interrupt(int signal_number) {
    g_interrupt_signal = signal_number;
}

class InterruptForwarding {
public:
    InterruptForwarding() {
        g_interrupt_signal = 0;
        for (std::size_t i = 0; i < 2; ++i) {
            struct sigaction action{};
            action.sa_handler = record_interrupt;
            sigemptyset(&action.sa_mask);
            installed_[i] = ::sigaction(kSignals[i], nullptr, &previous_[i]) == 0 &&
                            previous_[i].sa_handler != SIG_IGN &&  // ignored signals stay ignored
                            ::sigaction(kSignals[i], &action, nullptr) == 0;
        }
    }
    ~InterruptForwarding() {
        for (std::size_t i = 0; i < 2; ++i)
            if (installed_[i]) ::sigaction(kSignals[i], &previous_[i], nullptr);
    }
    InterruptForwarding(const InterruptForwarding&) = delete;
    InterruptForwarding& operator=(const InterruptForwarding&) = delete;

    static int pending() { return g_interrupt_signal; }

private:
    static constexpr int kSignals[2] = {SIGINT, SIGTERM};
    struct sigaction previous_[2]{};
    bool installed_[2] = {false, false};
};

}  // namespace

std::string ProcessResult::describe() const {
    if (timed_out) {
        char text[64];
        std::snprintf(text, sizeof(text), "timed out after %g s", timeout_seconds);
        return text;
    }
    if (returncode < 0) {
        const char* name = ::strsignal(-returncode);
        return "killed by signal " + std::to_string(-returncode) + (name ? std::string(" (") + name + ")" : "");
    }
    return "exit status " + std::to_string(returncode);
}

ProcessResult run_process(const std::vector<std::string>& argv, std::optional<double> timeout_seconds,
                          std::size_t max_capture_bytes, const std::vector<std::string>& environment_overrides) {
    const std::string command = quote_command(argv);
    if (argv.empty() || argv[0].empty()) throw PolygraphyException("Could not start check command: the command is empty");
    if (timeout_seconds && !(*timeout_seconds > 0.0 && std::isfinite(*timeout_seconds)))
        throw PolygraphyException("Invalid timeout for command '" + command + "': it must be a positive number of seconds");

    Fd out_read, out_write, err_read, err_write;
    make_pipe(out_read, out_write, command);
    make_pipe(err_read, err_write, command);

    SpawnSetup setup;
    posix_spawn_file_actions_addopen(&setup.actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&setup.actions, out_write.get(), 1);
    posix_spawn_file_actions_adddup2(&setup.actions, err_write.get(), 2);
    // Own process group: a timeout kills the command and everything it started.
    sigset_t no_signals;
    sigemptyset(&no_signals);
    sigset_t default_signals;
    sigemptyset(&default_signals);
    sigaddset(&default_signals, SIGPIPE);
    posix_spawnattr_setsigmask(&setup.attributes, &no_signals);
    posix_spawnattr_setsigdefault(&setup.attributes, &default_signals);
    posix_spawnattr_setpgroup(&setup.attributes, 0);
    posix_spawnattr_setflags(&setup.attributes,
                             POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);

    // The child's environment: ours, with the overrides replacing variables of the same name.
    std::vector<char*> environment;
    for (char** entry = environ; *entry; ++entry) {
        const std::string_view current(*entry);
        const bool overridden = std::any_of(environment_overrides.begin(), environment_overrides.end(),
                                            [&](const std::string& override_entry) {
                                                const auto name_end = override_entry.find('=') + 1;
                                                return current.substr(0, name_end) == override_entry.substr(0, name_end);
                                            });
        if (!overridden) environment.push_back(*entry);
    }
    for (const auto& entry : environment_overrides) environment.push_back(const_cast<char*>(entry.c_str()));
    environment.push_back(nullptr);

    std::optional<InterruptForwarding> forwarding;
    forwarding.emplace();
    pid_t pid = -1;
    const int spawn_error = ::posix_spawnp(&pid, argv[0].c_str(), &setup.actions, &setup.attributes, args.data(), environment.data());
    if (spawn_error != 0)
        throw PolygraphyException("Could not start check command '" + command + "': " + argv[0] + ": " +
                                  std::strerror(spawn_error));
    out_write.reset();
    err_write.reset();

    ProcessResult result;
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    std::optional<Clock::time_point> deadline;
    if (timeout_seconds)
        deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*timeout_seconds));
    // After a kill, grandchildren that left the process group may keep the pipes open: stop
    // reading shortly after the kill instead of waiting for them.
    std::optional<Clock::time_point> drain_deadline;

    std::string* sinks[2] = {&result.stdout_text, &result.stderr_text};
    Fd* sources[2] = {&out_read, &err_read};
    char buffer[65536];
    bool interrupted = false;
    auto kill_on_interrupt = [&] {
        if (!interrupted && InterruptForwarding::pending()) {
            ::kill(-pid, SIGKILL);
            interrupted = true;
            if (!drain_deadline) drain_deadline = Clock::now() + std::chrono::seconds(1);
        }
    };
    while (out_read.get() >= 0 || err_read.get() >= 0) {
        kill_on_interrupt();
        int wait_ms = -1;
        const auto now = Clock::now();
        const auto limit = drain_deadline ? drain_deadline : deadline;
        if (limit) {
            if (now >= *limit) {
                if (drain_deadline) break;
                ::kill(-pid, SIGKILL);
                result.timed_out = true;
                result.timeout_seconds = *timeout_seconds;
                drain_deadline = now + std::chrono::seconds(1);
                continue;
            }
            wait_ms = static_cast<int>(
                std::chrono::duration_cast<std::chrono::milliseconds>(*limit - now).count() + 1);
        }
        // Wake up now and then: an interrupt that lands just before poll() must not wait for output.
        if (wait_ms < 0 || wait_ms > 100) wait_ms = 100;
        pollfd fds[2];
        nfds_t count = 0;
        int which[2];
        for (int s = 0; s < 2; ++s)
            if (sources[s]->get() >= 0) {
                fds[count] = {sources[s]->get(), POLLIN, 0};
                which[count++] = s;
            }
        const int ready = ::poll(fds, count, wait_ms);
        if (ready < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (nfds_t i = 0; i < count; ++i) {
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            const ssize_t n = ::read(fds[i].fd, buffer, sizeof(buffer));
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n <= 0) {
                sources[which[i]]->reset();
                continue;
            }
            std::string& sink = *sinks[which[i]];
            const std::size_t room = max_capture_bytes > sink.size() ? max_capture_bytes - sink.size() : 0;
            const std::size_t keep = std::min(room, static_cast<std::size_t>(n));
            sink.append(buffer, keep);
            if (keep < static_cast<std::size_t>(n)) result.truncated = true;
        }
    }

    // The streams may close before the command ends (it closed them itself): keep the time limit.
    int status = 0;
    for (;;) {
        kill_on_interrupt();
        const bool poll_only = (deadline && !result.timed_out) || (!interrupted && !result.timed_out);
        const pid_t done = ::waitpid(pid, &status, poll_only ? WNOHANG : 0);
        if (done == pid) break;
        if (done < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (deadline && Clock::now() >= *deadline) {
            ::kill(-pid, SIGKILL);
            result.timed_out = true;
            result.timeout_seconds = *timeout_seconds;
            continue;
        }
        ::usleep(10000);
    }
    if (interrupted) {
        // Let the interruption take its ordinary course now that the command is gone.
        const int signal_number = InterruptForwarding::pending();
        forwarding.reset();
        ::raise(signal_number);
    }
    if (!result.timed_out) {
        if (WIFEXITED(status))
            result.returncode = WEXITSTATUS(status);
        else if (WIFSIGNALED(status))
            result.returncode = -WTERMSIG(status);
    }
    return result;
}

}  // namespace polygraphy
