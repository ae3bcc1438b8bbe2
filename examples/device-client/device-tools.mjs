// The device_* tools, backed by the machine this client runs on. Which tools exist depends on the
// machine: device_battery only where /sys/class/power_supply lists a battery.
import { appendFile, readdir, readFile } from "node:fs/promises";
import path from "node:path";

/** Batteries under a power_supply directory (Linux sysfs layout): [{name, dir}]. */
export async function findBatteries(powerSupplyDir = "/sys/class/power_supply") {
  let entries;
  try {
    entries = await readdir(powerSupplyDir);
  } catch {
    return [];
  }
  const batteries = [];
  for (const name of entries.sort()) {
    const dir = path.join(powerSupplyDir, name);
    const type = await readFile(path.join(dir, "type"), "utf8").catch(() => "");
    if (type.trim() === "Battery") batteries.push({ name, dir });
  }
  return batteries;
}

async function readOptional(file) {
  const text = await readFile(file, "utf8").catch(() => undefined);
  return text?.trim();
}

/**
 * The tools this device offers now.
 * @param {{ notifyFile: string, powerSupplyDir?: string }} options
 */
export async function deviceTools(options) {
  const powerSupplyDir = options.powerSupplyDir ?? "/sys/class/power_supply";
  const tools = [
    {
      name: "device_time",
      description:
        "The current date and time on the user's device, with its time zone. Use it for 'now', 'today' or scheduling questions.",
      input_schema: {
        type: "object",
        properties: {
          time_zone: {
            type: "string",
            description: "IANA zone to show the time in (default: the device's zone)",
          },
        },
        additionalProperties: false,
      },
      deferrable: false,
      execute(input) {
        const now = new Date();
        const zone = input.time_zone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
        let local;
        try {
          local = now.toLocaleString("en-GB", { timeZone: zone, timeZoneName: "short" });
        } catch {
          return { kind: "error", code: "EINVAL_INPUT", message: `unknown time zone ${zone}` };
        }
        return {
          kind: "device_time",
          iso: now.toISOString(),
          epoch_ms: now.getTime(),
          time_zone: zone,
          local,
        };
      },
    },
    {
      name: "device_notify",
      description: "Show the user a notification on their device (title and short body).",
      input_schema: {
        type: "object",
        properties: {
          title: { type: "string", maxLength: 200 },
          body: { type: "string", maxLength: 2000 },
        },
        required: ["title", "body"],
        additionalProperties: false,
      },
      deferrable: false,
      async execute(input) {
        const at = new Date().toISOString();
        // The example's "notification centre" is a JSONL file a desktop watcher could pick up.
        await appendFile(
          options.notifyFile,
          `${JSON.stringify({ at, title: input.title, body: input.body })}\n`,
        );
        return { kind: "device_notified", at, title: input.title };
      },
    },
  ];
  const batteries = await findBatteries(powerSupplyDir);
  if (batteries.length > 0) {
    tools.push({
      name: "device_battery",
      description: "Battery charge and charging state of the user's device.",
      input_schema: { type: "object", properties: {}, additionalProperties: false },
      deferrable: false,
      async execute() {
        const found = await findBatteries(powerSupplyDir);
        if (found.length === 0)
          return { kind: "error", code: "EUNAVAILABLE", message: "the battery is gone" };
        return {
          kind: "device_battery",
          batteries: await Promise.all(
            found.map(async ({ name, dir }) => {
              const capacity = await readOptional(path.join(dir, "capacity"));
              return {
                name,
                capacity_percent: capacity === undefined ? null : Number(capacity),
                status: (await readOptional(path.join(dir, "status"))) ?? "Unknown",
              };
            }),
          ),
        };
      },
    });
  }
  return tools;
}
