package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// demo sends 15 requests from one client to the API, then reads what the
// operators see: the request counters of the metrics endpoint, the same
// from OpenTelemetry, and the debug page's totals, refused without the
// token and served with it.
func demo(ctx context.Context, out io.Writer, apiURL, adminURL, token string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(url, auth string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, "", err
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}

	codes := map[int]int{}
	for range 15 {
		code, _, err := get(apiURL+"/api/hello", "")
		if err != nil {
			return err
		}
		codes[code]++
	}
	fmt.Fprintf(out, "\n15 requests to /api/hello: %d answered 200, %d answered 429\n", codes[http.StatusOK], codes[http.StatusTooManyRequests])

	code, body, err := get(adminURL+"/metrics", "")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET /metrics: %d", code)
	}
	fmt.Fprintln(out, "\nGET /metrics (the request counters):")
	for sc := bufio.NewScanner(strings.NewReader(body)); sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "floodgate_requests_total{") {
			fmt.Fprintln(out, "  "+sc.Text())
		}
	}

	code, body, err = get(adminURL+"/otel-metrics", "")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET /otel-metrics: %d", code)
	}
	fmt.Fprintln(out, "\nGET /otel-metrics (the same counters, from OpenTelemetry):")
	for sc := bufio.NewScanner(strings.NewReader(body)); sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "floodgate.requests{") {
			fmt.Fprintln(out, "  "+sc.Text())
		}
	}

	code, _, err = get(adminURL+"/debug/floodgate/?format=json", "")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nGET /debug/floodgate/ without the token: %d\n", code)
	code, body, err = get(adminURL+"/debug/floodgate/?format=json", "Bearer "+token)
	if err != nil {
		return err
	}
	var page struct {
		Totals map[string]uint64 `json:"totals"`
	}
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		return fmt.Errorf("the debug page's JSON: %w", err)
	}
	fmt.Fprintf(out, "GET /debug/floodgate/ with the token: %d, %d allowed and %d denied so far\n", code, page.Totals["allowed"], page.Totals["denied"])
	return nil
}
