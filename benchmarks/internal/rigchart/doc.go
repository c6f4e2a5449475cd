// Package rigchart turns the output of the benchmarks module's overload
// rig (TestOverloadRig) into SVG line charts, drawn by its own code: the
// load sweep's goodput and p99 against the offered load, one chart per
// transport, and the capacity-change run's limits and goodput over time.
// The rig writes its figures as TSV files (WriteSweep, WriteChange) and,
// when asked, its charts (WriteAll); cmd/rigcharts redraws them from the
// files alone.
package rigchart
