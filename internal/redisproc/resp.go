package redisproc

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// Just enough RESP2 to check on a server, so that checking needs no Redis
// client library (which would also log every refused dial while a server
// starts).

// ReplyError is an error reply from the server ("ERR ...", "MOVED ...",
// "NOAUTH ..."), as opposed to a failure to connect, write or read.
type ReplyError string

func (e ReplyError) Error() string { return string(e) }

// CommandTimeout bounds each call of [Command]: dialling, AUTH and the
// command together.
const CommandTimeout = 2 * time.Second

// Command runs one command on a fresh connection to addr, after AUTH when
// password is not empty. A reply is a string, an int64, nil or a []any of
// these; an error reply is a [ReplyError].
func Command(addr, password string, args ...string) (any, error) {
	c, err := net.DialTimeout("tcp", addr, CommandTimeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(CommandTimeout)); err != nil {
		return nil, err
	}
	r := bufio.NewReader(c)
	if password != "" {
		if _, err := roundTrip(c, r, "AUTH", password); err != nil {
			return nil, fmt.Errorf("AUTH: %w", err)
		}
	}
	return roundTrip(c, r, args...)
}

// CommandString runs [Command] and expects a string reply.
func CommandString(addr, password string, args ...string) (string, error) {
	reply, err := Command(addr, password, args...)
	if err != nil {
		return "", err
	}
	s, ok := reply.(string)
	if !ok {
		return "", fmt.Errorf("%s: got %T reply %v, want a string", args[0], reply, reply)
	}
	return s, nil
}

// InfoField returns the value of the "name:value" line in an INFO reply,
// or "" when there is none.
func InfoField(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// PID returns the process id of the server at addr (process_id in INFO
// server), to tell which process answers on a port.
func PID(addr, password string) (int, error) {
	info, err := CommandString(addr, password, "INFO", "server")
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(InfoField(info, "process_id"))
	if err != nil {
		return 0, fmt.Errorf("INFO server on %s: no process_id: %v", addr, err)
	}
	return pid, nil
}

func roundTrip(w io.Writer, r *bufio.Reader, args ...string) (any, error) {
	b := append([]byte{'*'}, strconv.Itoa(len(args))...)
	b = append(b, "\r\n"...)
	for _, a := range args {
		b = append(b, '$')
		b = append(b, strconv.Itoa(len(a))...)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	return readReply(r)
}

func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("malformed reply line %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+':
		return body, nil
	case '-':
		return nil, ReplyError(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err // $-1 is a nil reply
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		items := make([]any, n)
		for i := range items {
			if items[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return items, nil
	}
	return nil, fmt.Errorf("unknown reply type %q", line)
}
