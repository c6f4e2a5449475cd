package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// The harness speaks just enough RESP2 to check on its servers, so it
// needs no Redis client library.

// respError is an error reply from the server ("-ERR ...", "-MOVED ...").
type respError string

func (e respError) Error() string { return string(e) }

// commandTimeout bounds one connection and command of the harness.
const commandTimeout = 2 * time.Second

// command runs one command on a fresh connection to addr, after AUTH when
// password is set. A reply is a string, an int64, nil or a []any of these;
// an error reply is a respError.
func command(addr, password string, args ...string) (any, error) {
	c, err := net.DialTimeout("tcp", addr, commandTimeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(commandTimeout)); err != nil {
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

// commandString runs command and expects a string reply.
func commandString(addr, password string, args ...string) (string, error) {
	reply, err := command(addr, password, args...)
	if err != nil {
		return "", err
	}
	s, ok := reply.(string)
	if !ok {
		return "", fmt.Errorf("%s: got %T reply %v, want a string", args[0], reply, reply)
	}
	return s, nil
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
		return nil, respError(body)
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
