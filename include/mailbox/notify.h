/*
 * The systemd service notification protocol (sd_notify(3)), without
 * libsystemd: one datagram of newline-separated KEY=VALUE assignments to the
 * AF_UNIX socket named by $NOTIFY_SOCKET (a path, or "@name" for the abstract
 * namespace).  systemd documents the protocol as a stable interface.  With no
 * $NOTIFY_SOCKET (not under systemd, or Type=simple) every call does nothing.
 *
 *	mb_notify("READY=1\nSTATUS=serving");	once the daemon is serving
 *	mb_notify("STOPPING=1");		when it starts to shut down
 *	ms = mb_notify_watchdog();		from the main loop: sends WATCHDOG=1
 *						when half of WATCHDOG_USEC has passed
 *						since the last one; returns the ms until
 *						the next is due (a poll timeout cap), or
 *						-1 when systemd asked for no watchdog
 *
 * Not thread-safe: call from the main thread only.
 */
#ifndef MAILBOX_NOTIFY_H
#define MAILBOX_NOTIFY_H

/* Send STATE; 1 if sent, 0 when there is no $NOTIFY_SOCKET, -1 on error (errno). */
int	mb_notify(const char *state);

/* Half of $WATCHDOG_USEC in ms (the WATCHDOG=1 period), or 0 when there is
 * none or $WATCHDOG_PID names another process. */
long long	mb_notify_watchdog_period_ms(void);

/* WATCHDOG=1 if due; the ms until the next is due, or -1 when not asked for. */
int	mb_notify_watchdog(void);

#endif
