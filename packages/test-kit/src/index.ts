export * from "./ca.js";
export * from "./receiver.js";
export * from "./database.js";
export * from "./server-options.js";
export * from "./replica.js";
