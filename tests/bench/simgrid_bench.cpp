/* make bench, the SimGrid side of the comparison (issue 12): the same two
 * workloads as tests/bench/ring.lua and tests/bench/pipe_1f1b.lua, in
 * SimGrid's S4U API with pure alpha-beta links (CM02 model, latency and
 * bandwidth factors 1, no TCP window, no cross traffic), so that a message
 * of S bytes on one link of bandwidth B and latency L takes L + S/B as in
 * pipesim. Built only when pkg-config finds simgrid (Debian's
 * libsimgrid-dev); it prints the simulated time for the side-by-side check.
 *   simgrid_bench ring RANKS BYTES     ring all-reduce, 2(N-1) steps
 *   simgrid_bench 1f1b P M             Megatron-LM's 1F1B, F 1 ms, B 2 ms
 * Links: 50 GB/s, 5 us, one per ordered pair used (pipesim's mesh gives
 * every pair its own link). */
#include <simgrid/s4u.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

static const double BW = 50e9, LAT = 5e-6;

/* Hosts 0..n-1 of speed 1 Gflop/s, and for each (i, j) in pairs a link of
 * its own from i to j. */
static std::vector<sg4::Host *> platform(int n,
                                         const std::vector<std::pair<int, int>> &pairs)
{
    auto *zone = sg4::create_full_zone("world");
    std::vector<sg4::Host *> hosts;
    for (int i = 0; i < n; i++)
        hosts.push_back(zone->create_host("h" + std::to_string(i), 1e9));
    for (auto [a, b] : pairs) {
        auto *l = zone->create_link("l" + std::to_string(a) + "-" + std::to_string(b), BW)
                      ->set_latency(LAT);
        zone->add_route(hosts[a]->get_netpoint(), hosts[b]->get_netpoint(), nullptr, nullptr,
                        {sg4::LinkInRoute(l)}, false);
    }
    zone->seal();
    return hosts;
}

static sg4::Mailbox *box(const std::string &kind, int from, int to)
{
    return sg4::Mailbox::by_name(kind + std::to_string(from) + ">" + std::to_string(to));
}

/* Ring all-reduce: 2(N-1) steps; in each a rank sends a chunk of
 * bytes/N to its right neighbour and receives one from its left, the next
 * send waiting for this step's receive (reduce-scatter, then all-gather). */
static void ring_rank(int r, int n, double bytes)
{
    static int token;
    sg4::Mailbox *out = box("r", r, (r + 1) % n), *in = box("r", (r + n - 1) % n, r);
    uint64_t chunk = (uint64_t)(bytes / n);
    for (int s = 0; s < 2 * (n - 1); s++) {
        sg4::CommPtr send = out->put_async(&token, chunk);
        int *got = in->get<int>();
        (void)got;
        send->wait();
    }
}

/* Megatron-LM's 1F1B (schedules.py forward_backward_pipelining_without_
 * interleaving): warm-up forwards, steady 1F1B with the paired
 * send_forward_recv_backward / send_backward_recv_forward, cool-down
 * backwards; rendezvous messages of 1 MB. */
struct pipe_rank {
    int s, p, m;
    std::vector<sg4::CommPtr> batch;
    static constexpr double F = 1e-3, B = 2e-3, ACT = 1e6;
    int token = 0;
    void send(const char *kind, int to)
    {
        batch.push_back(box(kind, s, to)->put_async(&token, (uint64_t)ACT));
    }
    void recv(const char *kind, int from)
    {
        static int *sink;
        batch.push_back(box(kind, from, s)->get_async<int>(&sink));
    }
    void wait()
    {
        sg4::Comm::wait_all(batch);
        batch.clear();
    }
    void recv_forward()
    {
        if (s > 0) {
            recv("f", s - 1);
            wait();
        }
    }
    void send_forward()
    {
        if (s < p - 1) {
            send("f", s + 1);
            wait();
        }
    }
    void recv_backward()
    {
        if (s < p - 1) {
            recv("b", s + 1);
            wait();
        }
    }
    void send_backward()
    {
        if (s > 0) {
            send("b", s - 1);
            wait();
        }
    }
    void fwd() { sg4::this_actor::execute(F * 1e9); }
    void bwd() { sg4::this_actor::execute(B * 1e9); }
    void operator()()
    {
        int warmup = std::min(p - s - 1, m), remaining = m - warmup;
        for (int i = 0; i < warmup; i++) {
            recv_forward();
            fwd();
            send_forward();
        }
        if (remaining > 0)
            recv_forward();
        for (int i = 0; i < remaining; i++) {
            fwd();
            if (s < p - 1) { /* send_forward_recv_backward */
                send("f", s + 1);
                recv("b", s + 1);
                wait();
            }
            bwd();
            if (i == remaining - 1)
                send_backward();
            else if (s > 0) { /* send_backward_recv_forward */
                send("b", s - 1);
                recv("f", s - 1);
                wait();
            }
        }
        for (int i = 0; i < warmup; i++) {
            recv_backward();
            bwd();
            send_backward();
        }
    }
};

int main(int argc, char **argv)
{
    if (argc < 4) {
        std::fprintf(stderr, "usage: simgrid_bench ring RANKS BYTES | 1f1b P M\n");
        return 2;
    }
    std::string mode = argv[1];
    int a = std::atoi(argv[2]);
    double b = std::atof(argv[3]);
    int sg_argc = 1;
    char *sg_argv[] = {argv[0], nullptr};
    sg4::Engine e(&sg_argc, sg_argv);
    for (const char *cfg : {"network/model:CM02", "network/latency-factor:1",
                            "network/bandwidth-factor:1", "network/TCP-gamma:0",
                            "network/crosstraffic:0", "network/loopback-lat:0",
                            "network/weight-S:0"})
        e.set_config(cfg);
    std::vector<std::pair<int, int>> pairs;
    if (mode == "ring") {
        for (int i = 0; i < a; i++)
            pairs.push_back({i, (i + 1) % a});
        auto hosts = platform(a, pairs);
        for (int i = 0; i < a; i++)
            sg4::Actor::create("r" + std::to_string(i), hosts[i], ring_rank, i, a, b);
    } else {
        int m = (int)b;
        for (int i = 0; i + 1 < a; i++) {
            pairs.push_back({i, i + 1});
            pairs.push_back({i + 1, i});
        }
        auto hosts = platform(a, pairs);
        for (int i = 0; i < a; i++)
            sg4::Actor::create("s" + std::to_string(i), hosts[i], pipe_rank{i, a, m, {}});
    }
    e.run();
    std::printf("simgrid %s %s %s: simulated %.9f s\n", argv[1], argv[2], argv[3],
                sg4::Engine::get_clock());
    return 0;
}
