// The JSON depth bound lives with the HTTP API's wire limits; the MCP stdio server applies it too.
export { MAX_JSON_DEPTH, nestsDeeperThan } from "@toolbelt/bridge/wire";
