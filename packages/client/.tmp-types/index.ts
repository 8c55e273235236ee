export type * from "./pub.js";
