// A loop of a billion steps in constant memory: stopped at the deadline.
local count(n, acc) = if n == 0 then acc else count(n - 1, acc + 1) tailstrict;
{
  apiVersion: "trainc/v1",
  kind: "TrainingSystem",
  name: "hostile",
  labels: { n: std.toString(count(1000000000, 0)) },
}
