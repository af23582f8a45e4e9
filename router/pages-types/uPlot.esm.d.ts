// Types of ./uPlot.esm.js as the pages import it: uPlot's ES module, served from node_modules by
// router/pages.ts (tsconfig.pages.json `rootDirs` puts this file beside the pages).
import uPlot from "uplot";
export default uPlot;
