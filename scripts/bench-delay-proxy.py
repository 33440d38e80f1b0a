#!/usr/bin/env python3
"""A TCP proxy that delays every byte by DELAY_MS each way, for the benchmarks.

    bench-delay-proxy.py LISTEN_PORT_FILE UPSTREAM_PORT DELAY_MS

Listens on 127.0.0.1 (an ephemeral port, written to LISTEN_PORT_FILE once
it listens) and forwards each connection to 127.0.0.1:UPSTREAM_PORT, each
chunk delivered DELAY_MS after it was read, in order: a round trip costs
2 x DELAY_MS, as to an IMAP server across a network.  scripts/bench-push
puts it between syncd and Dovecot with IMAP_DELAY_MS=N.  Runs until killed.
Standard library only.
"""
import asyncio, sys, time

port_file, upstream, delay = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) / 1000.0


async def pump(reader, writer):
    queue = asyncio.Queue()

    async def deliver():
        while True:
            due, data = await queue.get()
            if data is None:
                break
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            writer.write(data)
            await writer.drain()
        writer.close()

    task = asyncio.ensure_future(deliver())
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            queue.put_nowait((time.monotonic() + delay, data))
    except ConnectionError:
        pass
    queue.put_nowait((0, None))
    try:
        await task
    except ConnectionError:
        pass


async def serve(creader, cwriter):
    try:
        ureader, uwriter = await asyncio.open_connection("127.0.0.1", upstream)
    except OSError:
        cwriter.close()
        return
    await asyncio.gather(pump(creader, uwriter), pump(ureader, cwriter))


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % server.sockets[0].getsockname()[1])
    import os
    os.rename(port_file + ".tmp", port_file)
    async with server:
        await server.serve_forever()

asyncio.run(main())
