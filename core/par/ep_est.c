/* How long one rank's share of an all-to-all takes alone (par/ep.h
 * par_ep_a2a_estimate): the cost of the SMs its kernels take from the
 * compute beside it in a combined 1F1B pair is that time times their
 * share, so the pass needs it before the engine runs. */
#include "par/ep.h"

#include <math.h>

double par_ep_a2a_estimate(const net *nw, int32_t me, const int32_t *peers,
                           const double *bytes, int32_t n, int32_t *key,
                           double *sum)
{
    int32_t keys = 0;
    double lat = 0, most = 0;
    int mesh = net_is_mesh(nw);
    for (int32_t k = 0; k < n; k++) {
        if (!(bytes[k] > 0) || peers[k] == me)
            continue;
        /* sends that leave by the same first link share it, one after
         * the other; a mesh gives every peer a link of its own */
        const int32_t *links;
        net_route_buf buf;
        int32_t hops = net_route(nw, me, peers[k], &links, &buf);
        int32_t id = mesh || hops == 0 ? -2 - k : links[0];
        double l0 = net_lone_time(nw, me, peers[k], 0);
        double t = net_lone_time(nw, me, peers[k], bytes[k]) - l0;
        lat = fmax(lat, l0);
        int32_t at = 0;
        while (at < keys && key[at] != id)
            at++;
        if (at == keys) {
            key[keys] = id;
            sum[keys++] = 0;
        }
        sum[at] += t;
        most = fmax(most, sum[at]);
    }
    return keys ? lat + most : 0;
}
